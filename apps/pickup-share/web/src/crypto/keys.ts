import { fromBase64url, openAll, RECORD_SIZE, sealAll, toBase64url } from './ece.ts'

/**
 * The key of an end-to-end encrypted share (README "End-to-end encrypted shares"): 16 random
 * bytes carried only in the pickup link's fragment (`/pickup#<token>&k=<key>`; a browser never
 * sends a fragment anywhere), or derived from a passphrase with PBKDF2-SHA-256 and a random salt
 * kept with the share. Either way it is RFC 8188's input keying material of every file's body.
 */

/** What the server keeps of an encrypted share (POST /api/share `encryption`, take's answer). */
export interface Encryption {
  scheme: 'aes128gcm'
  recordSize: number
  key: 'link' | 'passphrase'
  kdf?: { name: 'PBKDF2-SHA256'; salt: string; iterations: number }
  /** The files' names and types, an aes128gcm body (base64url). */
  names: string
}

/** One file's name and type as the names body holds them (in the share's file order). */
export interface SecretName {
  name: string
  type: string
}

/** PBKDF2-SHA-256 iterations of a passphrase share: OWASP's figure for it (2023). */
export const PBKDF2_ITERATIONS = 600_000

export const randomKey = () => crypto.getRandomValues(new Uint8Array(16))

export async function keyFromPassphrase(
  passphrase: string,
  kdf: { salt: string; iterations: number },
): Promise<Uint8Array<ArrayBuffer>> {
  const base = await crypto.subtle.importKey('raw', new TextEncoder().encode(passphrase), 'PBKDF2', false, [
    'deriveBits',
  ])
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: fromBase64url(kdf.salt), iterations: kdf.iterations },
    base,
    128,
  )
  return new Uint8Array(bits)
}

/** A new passphrase share's KDF parameters (a fresh salt each time). */
export const newKdf = () => ({
  name: 'PBKDF2-SHA256' as const,
  salt: toBase64url(crypto.getRandomValues(new Uint8Array(16))),
  iterations: PBKDF2_ITERATIONS,
})

/** The share's `encryption` for POST /api/share: the names sealed under the key. */
export async function shareEncryption(
  ikm: Uint8Array<ArrayBuffer>,
  names: SecretName[],
  kdf?: Encryption['kdf'],
): Promise<Encryption> {
  const sealed = await sealAll(ikm, new TextEncoder().encode(JSON.stringify(names)))
  return {
    scheme: 'aes128gcm',
    recordSize: RECORD_SIZE,
    key: kdf ? 'passphrase' : 'link',
    ...(kdf ? { kdf } : {}),
    names: toBase64url(sealed),
  }
}

/** The names of the share's files; throws when the key is wrong (the AEAD tag does not match). */
export async function openNames(ikm: Uint8Array<ArrayBuffer>, e: Encryption): Promise<SecretName[]> {
  const plain = await openAll(ikm, fromBase64url(e.names))
  const list = JSON.parse(new TextDecoder().decode(plain)) as unknown
  if (!Array.isArray(list)) throw new Error('not a list of names')
  return list.map((x: { name?: unknown; type?: unknown }) => ({
    name: typeof x.name === 'string' && x.name ? x.name : 'file',
    type: typeof x.type === 'string' ? x.type : 'application/octet-stream',
  }))
}

/** The link of an encrypted share: the token, then the key, both in the fragment only. */
export const linkWithKey = (link: string, key: Uint8Array) => `${link}&k=${toBase64url(key)}`
