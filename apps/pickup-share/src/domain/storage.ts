import type { Readable, Writable } from 'node:stream'

/**
 * The storage port. Every storage kind (local disk "blob", S3-compatible "bucket", and the
 * git-hosted "repo" kind that comes later) implements `StorageDriver`; the domain never knows
 * which one it talks to. Several instances of one kind can live side by side: each driver has
 * its own `instance` id, and share files record both the kind and the instance.
 */
export const STORE_KINDS = ['blob', 'bucket', 'repo'] as const
export type StoreKind = (typeof STORE_KINDS)[number]

/** What a browser needs to upload one file straight to the store. */
export interface UploadPermission {
  url: string
  method: 'PUT' | 'POST'
  /** Form fields of a POST policy, sent before the file field. */
  fields?: Record<string, string>
  /** Headers to send with a PUT. */
  headers?: Record<string, string>
}

export interface ObjectInfo {
  size: number
  type?: string | undefined
  lastModified: Date
}

/** Inclusive byte positions, as in `Content-Range: bytes start-end/size`. */
export interface ByteRange {
  start: number
  end: number
}

/**
 * A stream from `openRead` that can also write itself to a connection, with buffers it reuses
 * instead of a new one a chunk (the blob store's files, drivers/file-range-stream.ts). The
 * HTTP layer uses it for a download when the stream has it, and reads the stream otherwise.
 * `handed` is told each chunk's size before it is given to `out` (a Promise it returns is
 * waited for; its rejection ends the send); the promise settles once the
 * last write finished, or rejects when `out` closed or a read failed.
 */
export interface DirectSend {
  sendTo(out: Writable, handed: (bytes: number) => unknown): Promise<void>
}

export const sendsDirectly = (stream: Readable): stream is Readable & DirectSend =>
  typeof (stream as Readable & Partial<DirectSend>).sendTo === 'function'

export interface ListedObject {
  pathname: string
  size: number
  lastModified: Date
}

export interface IssueUploadInput {
  pathname: string
  type: string
  /** The declared size: the permission is for exactly this many bytes. */
  size: number
  /** null: no size cap (unlimited mode). */
  maxBytes: number | null
  expiresAt: Date
  allowOverwrite: boolean
}

export interface StorageDriver {
  readonly kind: StoreKind
  /** Instance id; unique across all drivers (the default instance of a kind uses the kind's name). */
  readonly instance: string
  /** The largest object the store accepts (the git host's per-file cap), when it has one. */
  readonly maxObjectBytes?: number
  /**
   * A client-direct upload permission bound to exactly this pathname and declared size: the store
   * (or our server, for the stores it writes itself) refuses any other length.
   */
  issueUpload(input: IssueUploadInput): Promise<UploadPermission>
  /**
   * Server-side streaming put. Stops reading and throws `file_too_large` as soon as more than
   * `size` (else `maxBytes`) bytes arrived, `size_mismatch` when the body ends short of `size`,
   * `upload_exists` when the object exists and overwrite is not allowed; nothing is kept then.
   */
  put(
    pathname: string,
    body: Readable,
    options: { size?: number | null; maxBytes: number | null; type?: string; allowOverwrite: boolean },
  ): Promise<{ size: number }>
  /** null when there is no such object. */
  stat(pathname: string): Promise<ObjectInfo | null>
  /**
   * Opens the object, or the bytes `range` names; resolves only once the store answered, so a
   * failure comes before any byte. `size` is the whole object's.
   */
  openRead(pathname: string, range?: ByteRange): Promise<{ stream: Readable; size: number }>
  /** Idempotent: deleting a missing object is not an error. */
  delete(pathname: string): Promise<void>
  /** Every object, for orphan cleanup. */
  list(): AsyncIterable<ListedObject>
  /**
   * Removes what uploads left half-written (temporary files): those of processes that are gone,
   * and any untouched since `staleBefore`. Stores that keep nothing partial do not have it.
   */
  removePartials?(staleBefore: Date): Promise<{ files: number; bytes: number }>
  /**
   * A connection test for stores where a probe write is the wrong check (a git remote: a commit
   * per test): resolves with an optional note, throws with a readable message. Stores without it
   * are tested with a small probe object (put, stat, delete).
   */
  checkConnection?(): Promise<{ note?: string; noteCode?: 'branch_missing' }>
  /** Removes local state (cache folders) of a driver built only for a connection test. */
  discard?(): Promise<void>
}

/** The storage instances this process knows, by instance id, with one default per kind. */
export class StorageRegistry {
  private readonly byInstance = new Map<string, StorageDriver>()
  private readonly defaults = new Map<StoreKind, StorageDriver>()

  constructor(drivers: StorageDriver[] = []) {
    for (const d of drivers) this.add(d)
  }

  add(driver: StorageDriver, options: { makeDefault?: boolean } = {}): void {
    if (this.byInstance.has(driver.instance)) throw new Error(`storage instance ${driver.instance} exists`)
    this.byInstance.set(driver.instance, driver)
    if (options.makeDefault || !this.defaults.has(driver.kind)) this.defaults.set(driver.kind, driver)
  }

  /** The default instance of a kind, or undefined when the kind is not enabled. */
  defaultFor(kind: StoreKind): StorageDriver | undefined {
    return this.defaults.get(kind)
  }

  /** Forgets an instance (deleted, or rebuilt with new settings). */
  remove(id: string): void {
    const driver = this.byInstance.get(id)
    if (!driver) return
    this.byInstance.delete(id)
    if (this.defaults.get(driver.kind) === driver) {
      const next = [...this.byInstance.values()].find((d) => d.kind === driver.kind)
      if (next) this.defaults.set(driver.kind, next)
      else this.defaults.delete(driver.kind)
    }
  }

  instance(id: string): StorageDriver | undefined {
    return this.byInstance.get(id)
  }

  all(): StorageDriver[] {
    return [...this.byInstance.values()]
  }

  enabledKinds(): StoreKind[] {
    return [...this.defaults.keys()]
  }
}
