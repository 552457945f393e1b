import { decryptStream } from './decrypt-stream.ts'
import { fromBase64url, plainSize } from './ece.ts'
import { type Encryption, keyFromPassphrase, openNames, type SecretName } from './keys.ts'
import { saveJob, startJob } from './jobs.ts'
import { uniqueNames, ZIP_MAX, zipSize } from './zip.ts'

/**
 * The pickup page's decryption, loaded only when a share is encrypted: the key (from the link or
 * the passphrase) opens the names; files are decrypted by the service worker as they download.
 */
export interface OpenedShare {
  key: Uint8Array<ArrayBuffer>
  names: SecretName[]
}

/** Opens the names with the link's key or the typed passphrase; throws when it is the wrong one. */
export async function unlockShare(e: Encryption, secret: { link: string } | { passphrase: string }) {
  const key =
    'link' in secret
      ? fromBase64url(secret.link)
      : await keyFromPassphrase(secret.passphrase, e.kdf ?? { salt: '', iterations: 1 })
  return { key, names: await openNames(key, e) } satisfies OpenedShare
}

export interface CipherFile {
  url: string
  name: string
  type: string
  cipherSize: number
}

const fileOf = (f: CipherFile, rs: number) => ({ ...f, size: plainSize(f.cipherSize, rs) })

/** Saves one file, decrypted as it streams; resolves when it has all been written (or failed). */
export async function saveDecrypted(key: Uint8Array<ArrayBuffer>, rs: number, f: CipherFile) {
  const file = fileOf(f, rs)
  const { url, ended } = await startJob({ key, files: [file], size: file.size })
  saveJob(url, ended)
  return { ended }
}

/** Saves every file as one ZIP made in this browser (null when it would pass 4 GiB). */
export async function saveZip(key: Uint8Array<ArrayBuffer>, rs: number, files: CipherFile[], zip: string) {
  const names = uniqueNames(files.map((f) => f.name))
  const list = files.map((f, i) => ({ ...fileOf(f, rs), name: names[i]! }))
  const size = zipSize(list)
  if (size > ZIP_MAX) return null
  const { url, ended } = await startJob({ key, files: list, size, zip })
  saveJob(url, ended)
  return { ended }
}

/** A preview in a frame: the worker answers its address with the plaintext, inline. */
export async function previewFrame(key: Uint8Array<ArrayBuffer>, rs: number, f: CipherFile) {
  // The type as the preview list knows it (no parameters): the sender's string is not trusted.
  const file = { ...fileOf(f, rs), type: f.type.split(';')[0]!.trim().toLowerCase() }
  return (await startJob({ key, files: [file], size: file.size, inline: true })).url
}

/** A small file's plaintext, decrypted here (previews are at most the site's preview size). */
async function decryptWhole(key: Uint8Array<ArrayBuffer>, url: string): Promise<Response> {
  const res = await fetch(url, { credentials: 'same-origin', cache: 'no-store' })
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`)
  return new Response(res.body.pipeThrough(decryptStream(key)))
}

/** A text file's plaintext. */
export async function decryptText(key: Uint8Array<ArrayBuffer>, url: string): Promise<string> {
  return new TextDecoder().decode(await (await decryptWhole(key, url)).arrayBuffer())
}

/**
 * An audio or video file's plaintext as a blob of its type, for the page's own player: a media
 * element asks for its source again and again (ranges, seeking), which a blob answers from
 * memory, where the worker's one-time stream could not.
 */
export async function decryptMedia(key: Uint8Array<ArrayBuffer>, url: string, type: string): Promise<Blob> {
  const plain = await (await decryptWhole(key, url)).arrayBuffer()
  return new Blob([plain], { type: type.split(';')[0]!.trim().toLowerCase() })
}
