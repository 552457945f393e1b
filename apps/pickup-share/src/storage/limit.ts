import { Transform, type TransformCallback } from 'node:stream'
import { ApiError } from '@quartet/core/errors'

/** Counts bytes through and fails with `file_too_large` the moment more than `maxBytes` pass. */
export class ByteLimit extends Transform {
  bytes = 0
  constructor(private readonly maxBytes: number | null) {
    super()
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.maxBytes !== null && this.bytes > this.maxBytes) {
      done(new ApiError('file_too_large', `the upload exceeds the limit of ${this.maxBytes} bytes`))
      return
    }
    done(null, chunk)
  }
}
