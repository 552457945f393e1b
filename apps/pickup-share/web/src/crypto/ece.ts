/**
 * RFC 8188 `aes128gcm` (Encrypted Content-Encoding for HTTP) with WebCrypto, record by record,
 * so that a file of any size is encrypted and decrypted in pieces (README "End-to-end encrypted
 * shares"). The format is the published one: `http_ece` (Node) decrypts what this writes.
 *
 * A body is `salt(16) | rs(4, big-endian) | idlen(1)=0` and then records of `rs` bytes (the last
 * may be shorter): record i is AES-128-GCM under the content key with nonce `base XOR i`, of the
 * record's data, a delimiter (1 for every record but the last, 2 for the last) and no padding.
 * The content key and nonce base come from HKDF-SHA-256(salt, ikm) with RFC 8188's two infos.
 */

import { dataPerRecord, HEADER_BYTES, OVERHEAD, RECORD_SIZE, recordCount } from './sizes.ts'

export * from './sizes.ts'

const enc = new TextEncoder()

/** The content key and nonce base of one body: what its salt and the share's key make. */
export interface BodyKeys {
  key: CryptoKey
  nonce: Uint8Array<ArrayBuffer>
  salt: Uint8Array<ArrayBuffer>
  rs: number
}

export async function bodyKeys(
  ikm: Uint8Array<ArrayBuffer>,
  salt: Uint8Array<ArrayBuffer>,
  rs: number,
): Promise<BodyKeys> {
  const base = await crypto.subtle.importKey('raw', ikm, 'HKDF', false, ['deriveBits'])
  const derive = async (info: string, bits: number) =>
    new Uint8Array(
      await crypto.subtle.deriveBits(
        { name: 'HKDF', hash: 'SHA-256', salt, info: enc.encode(`Content-Encoding: ${info}\0`) },
        base,
        bits,
      ),
    )
  const cek = await derive('aes128gcm', 128)
  const key = await crypto.subtle.importKey('raw', cek, 'AES-GCM', false, ['encrypt', 'decrypt'])
  return { key, nonce: await derive('nonce', 96), salt, rs }
}

/** The body's header: salt, record size, an empty key id. */
export function header(k: BodyKeys): Uint8Array<ArrayBuffer> {
  const h = new Uint8Array(HEADER_BYTES)
  h.set(k.salt, 0)
  new DataView(h.buffer).setUint32(16, k.rs)
  return h
}

/** Reads a header; throws when it is not one of a body with an empty key id. */
export function readHeader(bytes: Uint8Array): { salt: Uint8Array<ArrayBuffer>; rs: number } {
  if (bytes.length < HEADER_BYTES) throw new Error('truncated header')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const rs = view.getUint32(16)
  if (bytes[20] !== 0) throw new Error('unexpected key id')
  if (rs <= OVERHEAD) throw new Error('bad record size')
  return { salt: bytes.slice(0, 16), rs }
}

function nonceOf(k: BodyKeys, counter: number): Uint8Array<ArrayBuffer> {
  const n = k.nonce.slice()
  const view = new DataView(n.buffer)
  // XOR the counter into the low 48 bits (2^48 records is far beyond any file here).
  view.setUint16(6, view.getUint16(6) ^ Math.floor(counter / 2 ** 32))
  view.setUint32(8, view.getUint32(8) ^ (counter % 2 ** 32))
  return n
}

/** Record `counter` of a body: its data, the delimiter, then AES-GCM. */
export async function sealRecord(
  k: BodyKeys,
  counter: number,
  data: Uint8Array,
  last: boolean,
): Promise<Uint8Array<ArrayBuffer>> {
  const padded = new Uint8Array(data.length + 1)
  padded.set(data)
  padded[data.length] = last ? 2 : 1
  return new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-GCM', iv: nonceOf(k, counter) }, k.key, padded),
  )
}

/** Opens record `counter`; throws on a wrong key, a changed byte, or a misplaced last record. */
export async function openRecord(
  k: BodyKeys,
  counter: number,
  record: Uint8Array<ArrayBuffer>,
  last: boolean,
): Promise<Uint8Array<ArrayBuffer>> {
  const plain = new Uint8Array(
    await crypto.subtle.decrypt({ name: 'AES-GCM', iv: nonceOf(k, counter) }, k.key, record),
  )
  let end = plain.length - 1
  while (end >= 0 && plain[end] === 0) end--
  if (end < 0 || plain[end] !== (last ? 2 : 1)) throw new Error(last ? 'truncated' : 'bad delimiter')
  return plain.subarray(0, end)
}

/** Encrypts a small plaintext into one body at once (the names of a share's files). */
export async function sealAll(ikm: Uint8Array<ArrayBuffer>, data: Uint8Array, rs = RECORD_SIZE) {
  const k = await bodyKeys(ikm, crypto.getRandomValues(new Uint8Array(16)), rs)
  const n = recordCount(data.length, rs)
  const parts: Uint8Array[] = [header(k)]
  const per = dataPerRecord(rs)
  for (let i = 0; i < n; i++)
    parts.push(await sealRecord(k, i, data.subarray(i * per, (i + 1) * per), i === n - 1))
  return concat(parts)
}

/** Decrypts a whole small body (throws as openRecord). */
export async function openAll(
  ikm: Uint8Array<ArrayBuffer>,
  body: Uint8Array,
): Promise<Uint8Array<ArrayBuffer>> {
  const { salt, rs } = readHeader(body)
  const k = await bodyKeys(ikm, salt, rs)
  const parts: Uint8Array[] = []
  let i = 0
  for (let at = HEADER_BYTES; at < body.length; at += rs, i++)
    parts.push(await openRecord(k, i, body.slice(at, at + rs), at + rs >= body.length))
  if (i === 0) throw new Error('truncated')
  return concat(parts)
}

export function concat(parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

export function toBase64url(bytes: Uint8Array): string {
  let s = ''
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

export function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const s = atob(text.replace(/-/g, '+').replace(/_/g, '/'))
  const out = new Uint8Array(s.length)
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i)
  return out
}
