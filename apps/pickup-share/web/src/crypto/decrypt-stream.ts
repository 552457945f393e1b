import { type BodyKeys, bodyKeys, HEADER_BYTES, openRecord, readHeader } from './ece.ts'

/**
 * An aes128gcm body in, its plaintext out, record by record as the bytes arrive: at most one
 * record (64 KiB) and a network chunk are held. A record is opened only once the byte after it
 * has come (or the body ended), so the last record is known as the last — a body cut short or
 * extended fails its tag or its delimiter instead of passing for a shorter file.
 */
export function decryptStream(ikm: Uint8Array<ArrayBuffer>): TransformStream<Uint8Array, Uint8Array> {
  let buf = new Uint8Array(0)
  let keys: BodyKeys | null = null
  let counter = 0
  const append = (chunk: Uint8Array) => {
    const next = new Uint8Array(buf.length + chunk.length)
    next.set(buf)
    next.set(chunk, buf.length)
    buf = next
  }
  return new TransformStream({
    async transform(chunk, controller) {
      append(chunk)
      if (!keys) {
        if (buf.length < HEADER_BYTES) return
        const { salt, rs } = readHeader(buf)
        keys = await bodyKeys(ikm, salt, rs)
        buf = buf.slice(HEADER_BYTES)
      }
      const rs = keys.rs
      let at = 0
      while (buf.length - at > rs) {
        controller.enqueue(await openRecord(keys, counter++, buf.slice(at, at + rs), false))
        at += rs
      }
      if (at) buf = buf.slice(at)
    },
    async flush(controller) {
      if (!keys || buf.length === 0) throw new Error('truncated')
      controller.enqueue(await openRecord(keys, counter++, buf, true))
    },
  })
}
