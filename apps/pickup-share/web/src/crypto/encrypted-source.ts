import {
  type BodyKeys,
  cipherSize,
  dataPerRecord,
  header,
  HEADER_BYTES,
  recordCount,
  sealRecord,
} from './ece.ts'

/**
 * A file's aes128gcm body as tus-js-client reads its source: any byte range of the ciphertext,
 * made on demand from the file's slices. The body's salt is chosen once, when the upload begins,
 * so record i's ciphertext is a pure function of the key, the salt, i and the file's bytes: a
 * range asked again (a resumed upload, from the offset the server has) is the same bytes as the
 * first time, and only the records a range touches are read and encrypted — a 1,000 MB file is
 * never in memory (README "End-to-end encrypted shares").
 */
export class EncryptedSource {
  readonly size: number
  private readonly per: number
  private readonly records: number
  private readonly head: Uint8Array

  constructor(
    private readonly file: Blob,
    private readonly keys: BodyKeys,
  ) {
    this.size = cipherSize(file.size, keys.rs)
    this.per = dataPerRecord(keys.rs)
    this.records = recordCount(file.size, keys.rs)
    this.head = header(keys)
  }

  /** The ciphertext's bytes [start, end) (end past the body: to its end). */
  async bytes(start: number, end: number): Promise<Uint8Array<ArrayBuffer>> {
    end = Math.min(end, this.size)
    const out = new Uint8Array(Math.max(0, end - start))
    if (start < HEADER_BYTES) out.set(this.head.subarray(start, Math.min(end, HEADER_BYTES)), 0)
    if (end <= HEADER_BYTES) return out
    const rs = this.keys.rs
    const first = Math.floor((Math.max(start, HEADER_BYTES) - HEADER_BYTES) / rs)
    const last = Math.min(this.records - 1, Math.floor((end - 1 - HEADER_BYTES) / rs))
    const plain = new Uint8Array(await this.file.slice(first * this.per, (last + 1) * this.per).arrayBuffer())
    for (let i = first; i <= last; i++) {
      const at = (i - first) * this.per
      const record = await sealRecord(this.keys, i, plain.subarray(at, at + this.per), i === this.records - 1)
      const recordStart = HEADER_BYTES + i * rs
      const from = Math.max(start, recordStart)
      const to = Math.min(end, recordStart + record.length)
      out.set(record.subarray(from - recordStart, to - recordStart), from - start)
    }
    return out
  }

  /** tus-js-client's FileSource: a Blob of the range (its `size` is what the client counts). */
  async slice(start: number, end: number): Promise<{ value: Blob; done: boolean }> {
    const bytes = await this.bytes(start, end)
    return { value: new Blob([bytes]), done: start + bytes.length >= this.size }
  }

  close(): void {}

  /** The whole body as one Blob, for the stores without tus (a PUT needs a whole body). */
  async blob(chunk = 8 * 1024 * 1024): Promise<Blob> {
    const parts: Blob[] = []
    for (let at = 0; at < this.size; at += chunk) parts.push((await this.slice(at, at + chunk)).value)
    return new Blob(parts)
  }
}
