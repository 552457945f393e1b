import { createHash } from 'node:crypto'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import type { ByteRange } from '../domain/storage.ts'

/** Passes bytes through and fails the stream when they are not the git blob `sha` of `size` bytes. */
export class BlobVerifier extends Transform {
  private readonly hash = createHash('sha1')
  private bytes = 0
  constructor(
    private readonly sha: string,
    private readonly size: number,
  ) {
    super()
    this.hash.update(`blob ${size}\0`)
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.bytes > this.size) return done(new Error('mirror sent more bytes than the file has'))
    this.hash.update(chunk)
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
    if (this.bytes !== this.size || this.hash.digest('hex') !== this.sha)
      return done(new Error('mirror bytes do not match the committed blob'))
    done()
  }
}

/** The bytes `range` names of a stream read from its first byte; stops reading the source after them. */
export function sliceStream(source: Readable, range: ByteRange): Readable {
  async function* slice(): AsyncGenerator<Buffer> {
    let pos = 0
    for await (const chunk of source as AsyncIterable<Buffer>) {
      const from = Math.max(range.start - pos, 0)
      const to = Math.min(range.end + 1 - pos, chunk.length)
      pos += chunk.length
      if (to > from) yield chunk.subarray(from, to)
      if (pos > range.end) break
    }
  }
  return Readable.from(slice(), { objectMode: false })
}
