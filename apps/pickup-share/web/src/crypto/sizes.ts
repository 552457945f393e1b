/**
 * The sizes of RFC 8188 `aes128gcm` bodies as the pages write them (crypto/ece.ts): known from the
 * plaintext's size alone, before a byte is read. A module of its own, so the send page's first
 * view can check a size limit without loading the encryption code.
 */

export const HEADER_BYTES = 21
export const TAG_BYTES = 16
/** The tag and the delimiter: what each record adds to its data. */
export const OVERHEAD = TAG_BYTES + 1
/** The record size the pages write: 64 KiB (65,519 bytes of data a record). */
export const RECORD_SIZE = 65_536

/** How many bytes of data a record holds. */
export const dataPerRecord = (rs: number) => rs - OVERHEAD

/** How many records a plaintext of `size` bytes takes (one at least: the empty body has one). */
export const recordCount = (size: number, rs: number) => Math.max(1, Math.ceil(size / dataPerRecord(rs)))

/** The size of the body of a plaintext of `size` bytes. */
export const cipherSize = (size: number, rs: number) => HEADER_BYTES + size + OVERHEAD * recordCount(size, rs)

/** The plaintext's size of a body of `size` bytes (no padding, as the pages write). */
export function plainSize(size: number, rs: number): number {
  const body = size - HEADER_BYTES
  return body - OVERHEAD * Math.ceil(body / rs)
}
