import { randomBytes } from 'node:crypto'
import type { Dirent } from 'node:fs'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { ApiError } from '@quartet/core/errors'
import type {
  ByteRange,
  IssueUploadInput,
  ListedObject,
  ObjectInfo,
  StorageDriver,
  UploadPermission,
} from '../domain/storage.ts'
import { FileRangeStream } from './file-range-stream.ts'
import { putLimit } from './limit.ts'
import { isOutOfSpace, outOfSpace } from './out-of-space.ts'
import { type ServiceUpload, servicePutPermission } from './service-upload.ts'

export interface BlobDriverOptions extends ServiceUpload {
  /** Folder holding the objects; created when missing. */
  dir: string
  instance?: string
}

const TMP = '.tmp'
/** Temporary files are named `<host>.<pid>.<random>`: start-up knows which died with their process. */
const HOST = os.hostname().replace(/[^A-Za-z0-9-]/g, '_')

/**
 * The local-disk object store ("blob"). Uploads stream into a temporary file and are published
 * with link(2), which fails atomically when the object exists, so nothing is overwritten unless
 * allowed. Object paths are resolved inside the folder and can never leave it.
 */
export class BlobDriver implements StorageDriver {
  readonly kind = 'blob' as const
  readonly instance: string
  readonly root: string

  constructor(private readonly options: BlobDriverOptions) {
    this.root = path.resolve(options.dir)
    this.instance = options.instance ?? 'blob'
  }

  /** A driver built for a connection test leaves no folder behind (only when it holds no object). */
  async discard(): Promise<void> {
    for await (const _ of this.list()) return
    await fs.rm(this.root, { recursive: true, force: true })
  }

  /** The absolute file of a pathname; throws for anything that could leave the root. */
  resolve(pathname: string): string {
    const segments = pathname.split('/')
    const bad =
      pathname.length === 0 ||
      pathname.length > 1024 ||
      /[\0\\]/.test(pathname) ||
      segments.some((s) => s === '' || s === '.' || s === '..' || s.startsWith('.'))
    const full = path.resolve(this.root, pathname)
    if (bad || !full.startsWith(this.root + path.sep)) {
      throw new ApiError('file_not_found', 'no such object')
    }
    return full
  }

  async issueUpload(input: IssueUploadInput): Promise<UploadPermission> {
    this.resolve(input.pathname)
    return servicePutPermission(this.options, { instance: this.instance, ...input })
  }

  async put(
    pathname: string,
    body: Readable,
    options: { size?: number | null; maxBytes: number | null; allowOverwrite: boolean },
  ): Promise<{ size: number }> {
    const target = this.resolve(pathname)
    const tmpDir = path.join(this.root, TMP)
    await fs.mkdir(tmpDir, { recursive: true })
    const tmp = path.join(tmpDir, `${HOST}.${process.pid}.${randomBytes(12).toString('hex')}`)
    const limit = putLimit(options)
    // Create the file before streaming, so the clean-up below can never race its creation.
    let handle: fs.FileHandle
    try {
      handle = await fs.open(tmp, 'wx')
    } catch (err) {
      if (isOutOfSpace(err)) throw outOfSpace('blob', err)
      throw err
    }
    try {
      await pipeline(body, limit, handle.createWriteStream())
      await fs.mkdir(path.dirname(target), { recursive: true })
      if (options.allowOverwrite) await fs.rename(tmp, target)
      else {
        try {
          await fs.link(tmp, target)
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST')
            throw new ApiError('upload_exists', 'an object already exists at this pathname')
          throw err
        }
      }
      return { size: limit.bytes }
    } catch (err) {
      // A full disk (or quota) is an answer, not an accident: 507, and the partial file goes.
      if (!(err instanceof ApiError) && isOutOfSpace(err)) throw outOfSpace('blob', err)
      throw err
    } finally {
      await handle.close().catch(() => {})
      await fs.rm(tmp, { force: true })
    }
  }

  async stat(pathname: string): Promise<ObjectInfo | null> {
    let file: string
    try {
      file = this.resolve(pathname)
    } catch {
      return null
    }
    try {
      const s = await fs.stat(file)
      return s.isFile() ? { size: s.size, lastModified: s.mtime } : null
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null
      throw err
    }
  }

  async openRead(pathname: string, range?: ByteRange): Promise<{ stream: Readable; size: number }> {
    const file = this.resolve(pathname)
    let handle: fs.FileHandle
    try {
      handle = await fs.open(file, 'r')
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT')
        throw new ApiError('file_not_found', 'the file is no longer in the store')
      throw err
    }
    try {
      const { size } = await handle.stat()
      return { stream: new FileRangeStream(handle, range?.start ?? 0, range?.end ?? size - 1), size }
    } catch (err) {
      await handle.close()
      throw err
    }
  }

  async delete(pathname: string): Promise<void> {
    const file = this.resolve(pathname)
    await fs.rm(file, { force: true })
    // The name a resumable (tus) upload arrived under, and its record (drivers/tus-endpoints.ts).
    const tus = path.join(this.root, '.tus', pathname)
    await fs.rm(tus, { force: true })
    await fs.rm(`${tus}.json`, { force: true })
    await fs.rmdir(path.dirname(tus)).catch(() => {})
    // Remove the now empty prefix folder; a folder still in use keeps its files.
    const dir = path.dirname(file)
    if (dir !== this.root) await fs.rmdir(dir).catch(() => {})
  }

  async *list(): AsyncIterable<ListedObject> {
    yield* this.walk('')
  }

  /**
   * Removes temporary files uploads left behind: those of a process of this host that is gone
   * (a crash, kill -9; found at start-up right away), and any not written to since `staleBefore`
   * (another host's, or a pid reused). A live upload writes to its file all the time.
   */
  async removePartials(staleBefore: Date): Promise<{ files: number; bytes: number }> {
    const dir = path.join(this.root, TMP)
    const removed = { files: 0, bytes: 0 }
    let names: string[]
    try {
      names = await fs.readdir(dir)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return removed
      throw err
    }
    for (const name of names) {
      const file = path.join(dir, name)
      const s = await fs.stat(file).catch(() => null)
      if (!s?.isFile()) continue
      const [host, pid] = name.split('.')
      const orphaned = host === HOST && Number(pid) !== process.pid && !processAlive(Number(pid))
      if (!orphaned && s.mtime >= staleBefore) continue
      await fs.rm(file, { force: true })
      removed.files++
      removed.bytes += s.size
    }
    return removed
  }

  private async *walk(prefix: string): AsyncIterable<ListedObject> {
    let entries: Dirent[]
    try {
      entries = await fs.readdir(path.join(this.root, prefix), { withFileTypes: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw err
    }
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue
      const rel = prefix ? `${prefix}/${entry.name}` : entry.name
      if (entry.isDirectory()) yield* this.walk(rel)
      else if (entry.isFile()) {
        const s = await fs.stat(path.join(this.root, rel)).catch(() => null)
        if (s) yield { pathname: rel, size: s.size, lastModified: s.mtime }
      }
    }
  }
}

/** Whether a process of this host with that pid is running (a pid that is no number: no). */
function processAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
