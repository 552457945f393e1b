import type { StoreKind } from '../api.ts'
import { findResumable } from '../resumable.ts'
import { bodyKeys, fromBase64url, RECORD_SIZE, toBase64url } from './ece.ts'
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
 *
 * An encrypted upload is resumed after a reload as a plain one is: the share's key and the file's
 * salt are kept in this browser's localStorage beside the upload's proof (never sent anywhere)
 * from its first byte until it is done, so the same file picked again is encrypted to the very
 * same bytes and goes on from the server's offset. The entry goes once the upload is done or
 * forgotten.
 */
export interface ShareKey {
  ikm: Uint8Array<ArrayBuffer>
  kdf?: Encryption['kdf']
  /** Salts of files whose unfinished upload used this key (they resume). */
  salts: Map<File, Uint8Array<ArrayBuffer>>
}

interface Kept {
  ikm: string
  salt: string
  kdf?: Encryption['kdf']
}

const keptKey = (pathname: string) => `pickup-share:e2e:${pathname}`

function recall(pathname: string): Kept | null {
  try {
    const raw = localStorage.getItem(keptKey(pathname))
    return raw ? (JSON.parse(raw) as Kept) : null
  } catch {
    return null
  }
}

function keep(pathname: string, kept: Kept | null): void {
  try {
    if (kept) localStorage.setItem(keptKey(pathname), JSON.stringify(kept))
    else localStorage.removeItem(keptKey(pathname))
  } catch {
    // No storage (private mode): the upload cannot be resumed after a reload, nothing else.
  }
}

const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * The share's key: the one of an unfinished encrypted upload of these files when it fits (the
 * same way of keying; for a passphrase, the same passphrase), else a new random key (it goes in
 * the link) or one derived from the sender's passphrase.
 */
export async function shareKey(
  passphrase: string | null,
  files: File[],
  store: StoreKind,
): Promise<ShareKey> {
  for (const file of files) {
    const resumed = await findResumable(file, store, 'encrypted')
    const kept = resumed && recall(resumed.pathname)
    if (!kept || (passphrase === null) !== (kept.kdf === undefined)) continue
    const ikm = fromBase64url(kept.ikm)
    if (kept.kdf && passphrase !== null && !same(ikm, await keyFromPassphrase(passphrase, kept.kdf))) continue
    const key: ShareKey = { ikm, ...(kept.kdf ? { kdf: kept.kdf } : {}), salts: new Map() }
    for (const f of files) {
      const r = await findResumable(f, store, 'encrypted')
      const k = r && recall(r.pathname)
      if (k && k.ikm === kept.ikm) key.salts.set(f, fromBase64url(k.salt))
    }
    return key
  }
  if (passphrase === null) return { ikm: randomKey(), salts: new Map() }
  const kdf = newKdf()
  return { ikm: await keyFromPassphrase(passphrase, kdf), kdf, salts: new Map() }
}

/**
 * The file's aes128gcm body: its salt fixed now (or the one its unfinished upload used), so every
 * range of it is made the same way again.
 */
export async function sealFile(key: ShareKey, file: File, index: number) {
  const resumes = key.salts.get(file)
  const salt = resumes ?? crypto.getRandomValues(new Uint8Array(16))
  const keys = await bodyKeys(key.ikm, salt, RECORD_SIZE)
  const kept: Kept = {
    ikm: toBase64url(key.ikm),
    salt: toBase64url(salt),
    ...(key.kdf ? { kdf: key.kdf } : {}),
  }
  return {
    source: new EncryptedSource(file, keys),
    name: `encrypted-${index + 1}.bin`,
    resumes: resumes !== undefined,
    /** The upload began (or is done: null): what resuming it needs is kept (or forgotten). */
    keep: (pathname: string, begun: boolean) => keep(pathname, begun ? kept : null),
  }
}

/** The share's `encryption` field: the names and types, sealed, in the order of its files. */
export const sealShare = (key: ShareKey, names: SecretName[]) => shareEncryption(key.ikm, names, key.kdf)

export { linkWithKey } from './keys.ts'
