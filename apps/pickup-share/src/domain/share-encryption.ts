import { ApiError } from '@quartet/core/errors'
import type { StorageDriver } from './storage.ts'

/**
 * End-to-end encrypted shares (issue 47 item 2). The sender's browser encrypts every file with
 * RFC 8188 `aes128gcm` before it uploads it; the server stores and serves only ciphertext and
 * keeps, per share, what a receiver needs beside the key: which scheme and record size, whether
 * the key travels in the link's fragment or comes from a passphrase (and the KDF's salt and
 * iterations), and the files' names and types as one more aes128gcm body. The key itself never
 * reaches the server (README "End-to-end encrypted shares").
 */
export interface ShareEncryption {
  scheme: 'aes128gcm'
  /** RFC 8188 `rs`: the size of every record but the last, tag included. */
  recordSize: number
  /** `link`: 16 random bytes in the pickup link's fragment; `passphrase`: derived with `kdf`. */
  key: 'link' | 'passphrase'
  kdf?: { name: 'PBKDF2-SHA256'; salt: string; iterations: number } | undefined
  /** base64url of an aes128gcm body whose plaintext is the JSON list of the files' names and types. */
  names: string
}

/** The header of an aes128gcm body without a key id: salt (16), rs (4), idlen (1). */
export const ECE_HEADER_BYTES = 21
/** What every record adds: the 16-byte AEAD tag and the 1-byte delimiter. */
export const ECE_RECORD_OVERHEAD = 17

/**
 * Whether `size` bytes can be an aes128gcm body of record size `rs` with an empty key id, as the
 * pages write it: a header, then records of exactly `rs` bytes but the last, which holds at least
 * its delimiter and tag. Any plaintext length gives exactly one such size; anything between is
 * not a body the pages made.
 */
export function isEceLength(size: number, rs: number): boolean {
  const body = size - ECE_HEADER_BYTES
  if (body < ECE_RECORD_OVERHEAD) return false
  const records = Math.ceil(body / rs)
  const plain = body - records * ECE_RECORD_OVERHEAD
  return plain >= 0 && Math.max(1, Math.ceil(plain / (rs - ECE_RECORD_OVERHEAD))) === records
}

/**
 * The header of an uploaded file of an encrypted share, read from the store (21 bytes): it must
 * be an aes128gcm header with the share's record size and no key id, else the share is refused
 * (400) — a receiver's browser could not decrypt it. Nothing else of a body can be checked here:
 * without the key its records are just bytes.
 */
export async function checkEceHeader(
  driver: Pick<StorageDriver, 'openRead'>,
  pathname: string,
  rs: number,
  index: number,
): Promise<void> {
  const { stream } = await driver.openRead(pathname, { start: 0, end: ECE_HEADER_BYTES - 1 })
  const chunks: Buffer[] = []
  let got = 0
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk)
      got += chunk.length
      if (got >= ECE_HEADER_BYTES) break
    }
  } finally {
    stream.destroy()
  }
  const head = Buffer.concat(chunks).subarray(0, ECE_HEADER_BYTES)
  if (head.length < ECE_HEADER_BYTES || head.readUInt32BE(16) !== rs || head[20] !== 0)
    throw new ApiError(
      'bad_request',
      `body.files.${index}: not an aes128gcm body with records of ${rs} bytes and no key id (its header says otherwise)`,
    )
}
