import { Transform, type TransformCallback } from 'node:stream'
import { ApiError } from '@quartet/core/errors'

/**
 * Counts bytes through. Fails with `file_too_large` the moment more than `maxBytes` pass (the
 * excess byte is never passed on), and, when `exactBytes` is given, with `size_mismatch` when the
 * body ends short of it: an upload permission is for exactly its declared size.
 */
export class ByteLimit extends Transform {
  bytes = 0
  constructor(
    private readonly maxBytes: number | null,
    private readonly exactBytes: number | null = null,
  ) {
    super()
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.maxBytes !== null && this.bytes > this.maxBytes) {
      done(
        new ApiError(
          'file_too_large',
          this.exactBytes !== null
            ? `the upload is larger than the ${this.maxBytes} bytes its permission declared`
            : `the upload exceeds the limit of ${this.maxBytes} bytes`,
          { maximumSizeInBytes: this.maxBytes },
        ),
      )
      return
    }
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
    if (this.exactBytes !== null && this.bytes !== this.exactBytes) {
      done(
        new ApiError(
          'size_mismatch',
          `the upload ended after ${this.bytes} bytes; its permission declared ${this.exactBytes}`,
        ),
      )
      return
    }
    done()
  }
}

/**
 * The byte limit of a put: exactly `size` bytes when the permission declared one (every
 * permission issued since sizes are enforced does), else at most `maxBytes`.
 */
export function putLimit(options: { size?: number | null; maxBytes: number | null }): ByteLimit {
  const size = options.size ?? null
  if (size === null) return new ByteLimit(options.maxBytes)
  return new ByteLimit(options.maxBytes === null ? size : Math.min(size, options.maxBytes), size)
}
