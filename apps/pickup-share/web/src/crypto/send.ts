import { bodyKeys, RECORD_SIZE } from './ece.ts'
import { EncryptedSource } from './encrypted-source.ts'
import {
  type Encryption,
  keyFromPassphrase,
  newKdf,
  randomKey,
  type SecretName,
  shareEncryption,
} from './keys.ts'

/**
 * The send page's encryption, loaded only when a share is encrypted (the first view stays
 * small): the share's key, each file's body with a salt of its own, and the sealed names.
 */
export interface ShareKey {
  ikm: Uint8Array<ArrayBuffer>
  kdf?: Encryption['kdf']
}

/** A random key (it goes in the link), or one derived from the sender's passphrase. */
export async function shareKey(passphrase: string | null): Promise<ShareKey> {
  if (passphrase === null) return { ikm: randomKey() }
  const kdf = newKdf()
  return { ikm: await keyFromPassphrase(passphrase, kdf), kdf }
}

/** The file's aes128gcm body: a random salt fixed now, so every range of it is made the same way again. */
export async function sealFile(key: ShareKey, file: File, index: number) {
  const keys = await bodyKeys(key.ikm, crypto.getRandomValues(new Uint8Array(16)), RECORD_SIZE)
  return { source: new EncryptedSource(file, keys), name: `encrypted-${index + 1}.bin` }
}

/** The share's `encryption` field: the names and types, sealed, in the order of its files. */
export const sealShare = (key: ShareKey, names: SecretName[]) => shareEncryption(key.ikm, names, key.kdf)

export { linkWithKey } from './keys.ts'
