import type { FileHandle } from 'node:fs/promises'
import { Readable, type Writable } from 'node:stream'
import type { DirectSend } from '../domain/storage.ts'

/** Bytes per read: one read and one write a MiB keep the syscalls few. */
const CHUNK = 1024 * 1024

/**
 * Bytes `start`..`end` (inclusive) of an open file. As a Readable it reads a new buffer a
 * chunk, as `fs.createReadStream` does, for any consumer (a ZIP of the share's files). Sent to
 * a connection with `sendTo` (a download), it reads into two buffers it reuses: one is filled
 * while the other is being written.
 *
 * Why not one buffer a chunk there too: each 1 MiB buffer was memory outside V8's heap that
 * only a full collection gives back, so V8 ran one every few dozen MiB sent (a quarter of the
 * process's CPU during a download, in `perf`), and glibc handed each buffer out as a fresh
 * mapping (with MALLOC_MMAP_THRESHOLD_ at 128 KiB, as the image sets it) that faulted in page by page.
 * Measured with bench/pickup-share on Node 24.21: 0.53-0.69 of nginx's speed before.
 *
 * A file that turns out shorter than the range ends the stream early; the caller counts what
 * was sent. The file handle is closed when the stream ends or is destroyed.
 */
export class FileRangeStream extends Readable implements DirectSend {
  private position: number
  private readonly until: number

  constructor(
    private readonly handle: FileHandle,
    start: number,
    end: number,
  ) {
    super({ highWaterMark: CHUNK })
    this.position = start
    this.until = end + 1
  }

  override _read(): void {
    const wanted = Math.min(CHUNK, this.until - this.position)
    if (wanted <= 0) {
      this.push(null)
      return
    }
    const buffer = Buffer.allocUnsafeSlow(wanted)
    this.handle.read(buffer, 0, wanted, this.position).then(
      ({ bytesRead }) => {
        if (bytesRead === 0) {
          this.push(null)
          return
        }
        this.position += bytesRead
        this.push(bytesRead === wanted ? buffer : buffer.subarray(0, bytesRead))
      },
      (err: Error) => this.destroy(err),
    )
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    this.handle.close().then(
      () => callback(err),
      (closeErr: Error) => callback(err ?? closeErr),
    )
  }

  async sendTo(out: Writable, handed: (bytes: number) => unknown): Promise<void> {
    const buffers = [Buffer.allocUnsafeSlow(CHUNK), Buffer.allocUnsafeSlow(CHUNK)]
    let next = 0
    // The write in flight: its buffer is the one not being read into.
    let writing: Promise<void> = Promise.resolve()
    try {
      for (;;) {
        const wanted = Math.min(CHUNK, this.until - this.position)
        if (wanted <= 0) break
        const buffer = buffers[next]!
        next ^= 1
        const { bytesRead } = await this.handle.read(buffer, 0, wanted, this.position)
        await writing
        if (bytesRead === 0) break
        this.position += bytesRead
        const allowed = handed(bytesRead)
        if (allowed instanceof Promise) await allowed
        writing = written(out, buffer.subarray(0, bytesRead))
        // Handled now, awaited after the next read: a client that leaves while the disk is read
        // must not be an unhandled rejection (node would end the process for it).
        writing.catch(() => {})
      }
      await writing
    } finally {
      // A write still in flight when a read failed: wait for it before its buffer can go.
      await writing.catch(() => {})
      this.destroy()
    }
  }
}

/** Resolves once `out` has taken `chunk` (the connection wrote it), rejects when it closed first. */
function written(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (out.destroyed) {
      reject(new Error('the connection closed'))
      return
    }
    const closed = () => reject(new Error('the connection closed'))
    out.once('close', closed)
    out.write(chunk, (err) => {
      out.off('close', closed)
      if (err) reject(err)
      else resolve()
    })
  })
}
