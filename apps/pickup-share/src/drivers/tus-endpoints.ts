import fs from 'node:fs/promises'
import path from 'node:path'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { FileStore } from '@tus/file-store'
import { MemoryLocker, Server } from '@tus/server'
import { type DataStore, EVENTS, type Lock, type Locker, type Upload } from '@tus/utils'
import type { ResumableDataPort } from '../domain/ports.ts'
import type { StorageDriver } from '../domain/storage.ts'
import type { Logger } from '@quartet/core/log'
import { ApiError } from '@quartet/core/errors'
import type { UploadTokens } from '../domain/upload-token.ts'
import { BlobDriver } from './blob-driver.ts'
import { BucketDriver } from './bucket-driver.ts'
import type * as S3Libraries from './s3-libraries.chunk.ts'

/** Where tus keeps a blob instance's uploads while they arrive: a hidden folder the store never lists. */
export const TUS_DIR = '.tus'

/** The tus extensions served: core + creation, termination, expiration (no deferred lengths). */
const EXTENSIONS = ['creation', 'creation-with-upload', 'termination', 'expiration']

export interface TusHooks {
  /** The last byte of an upload arrived and the file is in place under its pathname. */
  finished(instance: string, pathname: string): Promise<void>
  /** The client terminated an unfinished upload. */
  terminated(instance: string, pathname: string): Promise<void>
  /** The upload is past its expiry (or already swept): a request that had to let go of it ends 410. */
  expired(instance: string, pathname: string): Promise<boolean>
}

/**
 * How long a request asked to let go of an upload (by a newer request for it, or the expiry sweep)
 * may go on writing: what it has received is still written, then it ends. tus waits 3 s by default,
 * which let a PATCH outlive its upload's expiry (0 means "the default" to @tus/server).
 */
const LOCK_DRAIN_MS = 1

/** Why a request stopped writing: its upload expired meanwhile and is being removed. */
const UPLOAD_EXPIRED = {
  status_code: 410,
  body: 'this upload has expired and is removed; ask for a new permission\n',
}

/**
 * The last segment of an upload's URL: `<base64url(pathname)>.<tag>`, the tag binding the pathname
 * to the server's secret (UploadTokens.tusUrlTag). The pathname alone does not make the URL.
 */
const uploadSegment = (pathname: string, tag: string): string =>
  `${Buffer.from(pathname).toString('base64url')}.${tag}`

const BASE64URL = /^[A-Za-z0-9_-]+$/

/** The pathname and tag of an upload URL's last segment, if it has that form (the tag unchecked). */
function parseUploadSegment(segment: string): { pathname: string; tag: string } | undefined {
  const [encoded, tag, extra] = segment.split('.')
  if (!encoded || !tag || extra !== undefined || !BASE64URL.test(encoded) || !BASE64URL.test(tag))
    return undefined
  const pathname = Buffer.from(encoded, 'base64url').toString('utf8')
  // One spelling per pathname: no second URL for it from base64url's spare bits or bad UTF-8.
  if (Buffer.from(pathname).toString('base64url') !== encoded) return undefined
  return { pathname, tag }
}

/**
 * The answer to every request on an upload URL that names no upload: an unknown or removed one,
 * and as well a URL this server did not make (the old `<base64url(pathname)>` form, a wrong tag),
 * for every method; so a stranger who knows a pathname learns nothing, not even that it exists.
 */
export const unknownUpload = (): ApiError =>
  new ApiError('upload_not_found', 'no such upload: it was removed, it expired, or this is not its URL')

/** What a tus request carries from our own checks to the tus server (the pathname chosen for it). */
export const TUS_UPLOAD_ID = Symbol('tusUploadId')
type NodeRuntime = { runtime?: { node?: { req?: IncomingMessage & { [TUS_UPLOAD_ID]?: string } } } }

/**
 * One @tus/server per storage instance, built on first use: `@tus/file-store` in the blob folder's
 * `.tus/` for a blob instance (the finished file is hard-linked to its pathname: no copy, and
 * link(2) never overwrites), `@tus/s3-store` for a bucket instance (S3 multipart; the finished
 * object's key is the pathname). The upload's id is the permission's pathname, so every replica
 * finds an upload from its URL alone; locks are shared through `locker` (RedisLocker with Redis).
 */
export class TusEndpoints implements ResumableDataPort {
  private readonly servers = new Map<string, { server: Server; driver: StorageDriver }>()
  private hooks: TusHooks | null = null
  /** Without Redis: one in-process locker for every instance's server and the sweeper. */
  private readonly locker: Locker

  constructor(
    private readonly d: {
      /** URL path under which instance `<id>` answers: `${basePath}/<id>`. */
      basePath: string
      locker: Locker | null
      expiryMs: number
      driver: (instance: string) => Promise<StorageDriver | undefined>
      /** S3 part size (bytes, at least 5 MiB). */
      s3PartSize?: number
      /** Makes and checks the tag of upload URLs (the server's secret). */
      tokens: Pick<UploadTokens, 'tusUrlTag' | 'isTusUrlTag'>
      logger: Logger
    },
  ) {
    this.locker = d.locker ?? new MemoryLocker()
  }

  /** Set once the domain exists (it needs this object as its data port). */
  setHooks(hooks: TusHooks): void {
    this.hooks = hooks
  }

  endpointOf(instance: string): string {
    return `${this.d.basePath}/${encodeURIComponent(instance)}`
  }

  /** The URL (path) of the upload of `pathname` on `instance`: the capability to write, resume or cancel it. */
  uploadUrlOf(instance: string, pathname: string): string {
    return `${this.endpointOf(instance)}/${uploadSegment(pathname, this.d.tokens.tusUrlTag(instance, pathname))}`
  }

  /**
   * The upload (its pathname, tus's id) an upload URL's last segment names, or undefined when the
   * segment is not one this server made for `instance`: tus then answers as for an unknown upload.
   */
  private uploadIdOf(instance: string, segment: string): string | undefined {
    const parsed = parseUploadSegment(segment)
    if (!parsed) return undefined
    return this.d.tokens.isTusUrlTag(instance, parsed.pathname, parsed.tag) ? parsed.pathname : undefined
  }

  /** The tus server of an instance, or null when the instance is unknown or cannot take tus uploads. */
  async serverFor(instance: string): Promise<Server | null> {
    const known = this.servers.get(instance)
    const driver = await this.d.driver(instance)
    if (!driver) return null
    // An instance rebuilt with new settings is a new driver object: rebuild its server too.
    if (known && known.driver === driver) return known.server
    const datastore = this.datastoreFor(driver)
    if (!datastore) return null
    datastore.extensions = EXTENSIONS
    const server = new Server({
      path: this.endpointOf(instance),
      datastore,
      locker: this.expiryAwareLocker(instance),
      lockDrainTimeout: LOCK_DRAIN_MS,
      disableTerminationForFinishedUploads: true,
      // Behind a proxy the relative URL resolves against what the client used. The id stays the
      // pathname (the store's file or key, the lock's key); only the URL carries the tag.
      generateUrl: (_req, { path: base, id }) =>
        `${base}/${uploadSegment(id, this.d.tokens.tusUrlTag(instance, id))}`,
      // A URL without this server's tag names no upload: every handler (HEAD, PATCH, DELETE,
      // GET) answers it as it answers an unknown one, before any lock or store is touched.
      getFileIdFromRequest: (_req, lastPath) => (lastPath ? this.uploadIdOf(instance, lastPath) : undefined),
      namingFunction: (req) => {
        const id = (req as NodeRuntime).runtime?.node?.req?.[TUS_UPLOAD_ID]
        if (!id) throw { status_code: 403, body: 'an upload permission is required\n' }
        return id
      },
      onResponseError: (_req, err) => {
        const status = 'status_code' in err ? err.status_code : 500
        // No such upload (or not its URL): the service's envelope, one answer for every case.
        if (status === 404) throw unknownUpload()
        // tus's own 410 (the upload's Upload-Expires passed, or the sweep took its bytes) says
        // what ours says: the same reason, however the request and the sweep met.
        if (status === 410) return UPLOAD_EXPIRED
        if (status < 500) return undefined
        this.d.logger.warn({ err, store: instance }, 'resumable upload request failed')
        // The store or Redis failed: the client retries (tus-js-client does on 5xx), nothing leaks.
        return { status_code: 503, body: 'the storage is unavailable right now; retry shortly\n' }
      },
      onUploadFinish: async (_req, upload) => {
        await this.placeFinished(driver, upload)
        await this.hooks?.finished(instance, upload.id)
        return {}
      },
    })
    server.on(EVENTS.POST_TERMINATE, (_req, _res, id: string) => {
      void removeLeftovers(driver, id)
        .then(() => this.hooks?.terminated(instance, id))
        .catch((err: unknown) => this.d.logger.warn({ err, store: instance }, 'terminating an upload failed'))
    })
    this.servers.set(instance, { server, driver })
    return server
  }

  async handle(instance: string, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const server = await this.serverFor(instance)
    if (!server) return false
    // @tus/server serves a finished upload's bytes to a GET of its URL: around the share, its
    // download counts and its expiry. Downloads go through shares only; a GET finds no upload.
    if (req.method === 'GET') throw unknownUpload()
    await server.handle(req, res)
    return true
  }

  /**
   * The shared locker, and one thing more for tus's requests: a request that was asked to let go
   * of its upload and finds it expired ends with 410 Gone once the lock is released, rather than a
   * 204 for bytes the sweep is about to remove (it then retries nothing: a 4xx is final to tus
   * clients). Asking costs one look at the permission, and only for a request asked to let go.
   */
  private expiryAwareLocker(instance: string): Locker {
    return {
      newLock: (id: string): Lock => {
        const lock = this.locker.newLock(id)
        let askedToLetGo = false
        return {
          lock: (signal, requestRelease) =>
            lock.lock(signal, () => {
              askedToLetGo = true
              requestRelease()
            }),
          unlock: async () => {
            await lock.unlock()
            if (!askedToLetGo) return
            // Unknown (the database is away): the request ends as tus ends it, with its offset.
            const expired = await this.hooks?.expired(instance, id).catch(() => false)
            if (expired) throw UPLOAD_EXPIRED
          },
        }
      },
    }
  }

  /**
   * Under the upload's lock (a request still writing to it is asked to stop, as tus does for a
   * newer request, and is let go at once): a finished upload is left alone, an unfinished one is
   * removed from the store. An upload whose last byte is written but which its request has not put
   * in place yet (that happens after tus releases the lock) counts as finished, and is put in place
   * here: the request's own placing then finds it there.
   */
  async expireIfUnfinished(instance: string, pathname: string): Promise<'finished' | 'removed'> {
    const server = await this.serverFor(instance)
    const driver = await this.d.driver(instance)
    if (!server || !driver) return 'removed'
    const lock = this.locker.newLock(pathname)
    const stop = new AbortController()
    const timer = setTimeout(() => stop.abort(), 10_000)
    try {
      await lock.lock(stop.signal, () => {})
    } finally {
      clearTimeout(timer)
    }
    try {
      if (await driver.stat(pathname)) return 'finished'
      const upload = await server.datastore.getUpload(pathname).catch(() => null)
      if (upload && upload.size !== undefined && upload.offset === upload.size) {
        await this.placeFinished(driver, upload)
        return 'finished'
      }
      try {
        // blob: the partial file and its record; bucket: the multipart upload and the .info record.
        await server.datastore.remove(pathname)
      } catch {
        // Nothing there (never written, or removed already).
      }
      await removeLeftovers(driver, pathname)
      return 'removed'
    } finally {
      await lock.unlock()
    }
  }

  private datastoreFor(driver: StorageDriver): DataStore | null {
    if (driver instanceof BlobDriver)
      return new FileStore({
        directory: path.join(driver.root, TUS_DIR),
        expirationPeriodInMilliseconds: this.d.expiryMs,
      })
    if (driver instanceof BucketDriver) {
      const o = driver.options
      // The AWS SDK behind the tus S3 store is loaded with the first bucket upload, not at start,
      // from a file of its own (s3-libraries.chunk.ts).
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { S3Store: Store } = require('./s3-libraries.chunk.ts') as typeof S3Libraries
      return new Store({
        partSize: Math.max(this.d.s3PartSize ?? 8 * 1024 * 1024, 5 * 1024 * 1024),
        expirationPeriodInMilliseconds: this.d.expiryMs,
        s3ClientConfig: {
          bucket: o.bucket,
          endpoint: o.endpoint,
          region: o.region,
          forcePathStyle: o.pathStyle,
          credentials: { accessKeyId: o.accessKey, secretAccessKey: o.secretKey },
          // Plain bodies: S3-compatible servers (MinIO, R2, s3rver) do not all take aws-chunked ones.
          requestChecksumCalculation: 'WHEN_REQUIRED',
          responseChecksumValidation: 'WHEN_REQUIRED',
        },
      })
    }
    return null
  }

  /** Blob: the finished file becomes the object at its pathname (a hard link; never overwrites). */
  private async placeFinished(driver: StorageDriver, upload: Upload): Promise<void> {
    if (!(driver instanceof BlobDriver)) return
    const target = driver.resolve(upload.id)
    const source = path.join(driver.root, TUS_DIR, upload.id)
    await fs.mkdir(path.dirname(target), { recursive: true })
    try {
      await fs.link(source, target)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      // A retried final PATCH: the same file is in place already.
      const [a, b] = await Promise.all([fs.stat(source), fs.stat(target)])
      if (a.ino !== b.ino) throw { status_code: 409, body: 'an object already exists at this pathname\n' }
    }
  }
}

/** What a tus datastore's remove() leaves behind of an unfinished upload. */
async function removeLeftovers(driver: StorageDriver, pathname: string): Promise<void> {
  // blob: the folder of the upload's file and record.
  if (driver instanceof BlobDriver)
    await fs.rmdir(path.dirname(path.join(driver.root, TUS_DIR, pathname))).catch(() => {})
  // bucket: bytes of a part shorter than the S3 minimum wait in `<key>.part`.
  if (driver instanceof BucketDriver) await driver.client.removeObject(driver.bucket, `${pathname}.part`)
}
