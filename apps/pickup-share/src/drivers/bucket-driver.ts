import type { Readable } from 'node:stream'
import { ApiError } from '@quartet/core/errors'
import type { Client } from 'minio'
import type * as S3Libraries from './s3-libraries.chunk.ts'
import type {
  ByteRange,
  IssueUploadInput,
  ListedObject,
  ObjectInfo,
  StorageDriver,
  UploadPermission,
} from '../domain/storage.ts'
import { putLimit } from './limit.ts'
import { isOutOfSpace, outOfSpace } from './out-of-space.ts'
import { presignV4 } from './s3-presign.ts'

export interface BucketDriverOptions {
  /** http(s)://host:port of the S3-compatible server. */
  endpoint: string
  accessKey: string
  secretKey: string
  bucket: string
  region: string
  pathStyle: boolean
  /** POST policy uploads (exact key + content-length-range); false: presigned PUT. */
  postPolicy: boolean
  instance?: string
}

/**
 * S3-compatible storage ("bucket") via the minio client: MinIO, AWS S3, Cloudflare R2.
 * Browsers upload with a presigned POST policy that pins the exact key and a content-length-range
 * of exactly the declared size, so the provider itself refuses any other body. Providers without
 * POST policies (R2) get a presigned PUT whose signature covers `Content-Length` (the same effect);
 * share checks the stored size again either way.
 */
export class BucketDriver implements StorageDriver {
  readonly kind = 'bucket' as const
  readonly instance: string
  readonly client: Client
  readonly bucket: string

  constructor(readonly options: BucketDriverOptions) {
    const url = new URL(options.endpoint)
    const useSSL = url.protocol === 'https:'
    // Loaded with the first bucket instance, from a file of its own (s3-libraries.chunk.ts).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { MinioClient } = require('./s3-libraries.chunk.ts') as typeof S3Libraries
    this.client = new MinioClient({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : useSSL ? 443 : 80,
      useSSL,
      accessKey: options.accessKey,
      secretKey: options.secretKey,
      region: options.region,
      pathStyle: options.pathStyle,
    })
    this.bucket = options.bucket
    this.instance = options.instance ?? 'bucket'
  }

  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket)))
      await this.client.makeBucket(this.bucket, this.options.region)
  }

  async issueUpload(input: IssueUploadInput): Promise<UploadPermission> {
    if (this.options.postPolicy) {
      const policy = this.client.newPostPolicy()
      policy.setBucket(this.bucket)
      policy.setKey(input.pathname)
      policy.setExpires(input.expiresAt)
      policy.setContentType(input.type)
      // Exactly the declared size: the provider refuses any other length (EntityTooSmall/TooLarge).
      policy.setContentLengthRange(input.size, input.size)
      const { postURL, formData } = await this.client.presignedPostPolicy(policy)
      return {
        url: postURL,
        method: 'POST',
        fields: Object.fromEntries(Object.entries(formData).map(([k, v]) => [k, String(v)])),
      }
    }
    const seconds = Math.max(1, Math.floor((input.expiresAt.getTime() - Date.now()) / 1000))
    const date = new Date()
    const unsigned = await this.client.presignedUrl('PUT', this.bucket, input.pathname, seconds, {}, date)
    // minio signs only `host`; the length is signed too, so the provider refuses any other one.
    const url = presignV4({
      url: unsigned,
      method: 'PUT',
      region: this.options.region,
      accessKey: this.options.accessKey,
      secretKey: this.options.secretKey,
      expiresSeconds: seconds,
      date,
      headers: { 'content-length': String(input.size) },
    })
    // Browsers set Content-Length from the body themselves (it may not be set by a script).
    return { url, method: 'PUT', headers: {} }
  }

  async put(
    pathname: string,
    body: Readable,
    options: { size?: number | null; maxBytes: number | null; type?: string; allowOverwrite: boolean },
  ): Promise<{ size: number }> {
    // S3 has no create-only PUT everywhere; pathnames are random and server-chosen, so the check
    // below only guards against reusing one.
    if (!options.allowOverwrite && (await this.stat(pathname)))
      throw new ApiError('upload_exists', 'an object already exists at this pathname')
    const limit = putLimit(options)
    body.on('error', (err) => limit.destroy(err))
    try {
      // A known size goes along: minio then sends one PUT with Content-Length (S3 refuses a
      // chunked body without it), else it falls back to a multipart upload.
      await this.client.putObject(this.bucket, pathname, body.pipe(limit), options.size ?? undefined, {
        'Content-Type': options.type ?? 'application/octet-stream',
      })
    } catch (err) {
      if (err instanceof ApiError) throw err
      // A bucket over its quota or a server out of disk (MinIO XMinioStorageFull, 507): 507.
      if (isOutOfSpace(err) || (err as { statusCode?: number }).statusCode === 507)
        throw outOfSpace('bucket', err)
      throw err
    }
    return { size: limit.bytes }
  }

  async stat(pathname: string): Promise<ObjectInfo | null> {
    try {
      const s = await this.client.statObject(this.bucket, pathname)
      const type = s.metaData?.['content-type'] as string | undefined
      return { size: s.size, type, lastModified: s.lastModified }
    } catch (err) {
      if (isNotFound(err)) return null
      throw err
    }
  }

  async openRead(pathname: string, range?: ByteRange): Promise<{ stream: Readable; size: number }> {
    const info = await this.stat(pathname)
    if (!info) throw new ApiError('file_not_found', 'the file is no longer in the store')
    try {
      const stream = range
        ? await this.client.getPartialObject(this.bucket, pathname, range.start, range.end - range.start + 1)
        : await this.client.getObject(this.bucket, pathname)
      return { stream, size: info.size }
    } catch (err) {
      if (isNotFound(err)) throw new ApiError('file_not_found', 'the file is no longer in the store')
      throw err
    }
  }

  async delete(pathname: string): Promise<void> {
    await this.client.removeObject(this.bucket, pathname)
    // The record a resumable (tus) upload leaves beside its object (@tus/s3-store); none is fine.
    await this.client.removeObject(this.bucket, `${pathname}.info`)
  }

  async *list(): AsyncIterable<ListedObject> {
    const stream = this.client.listObjectsV2(this.bucket, '', true)
    for await (const item of stream as AsyncIterable<{ name?: string; size: number; lastModified: Date }>) {
      if (item.name) yield { pathname: item.name, size: item.size, lastModified: new Date(item.lastModified) }
    }
  }
}

function isNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown }).code
  return code === 'NotFound' || code === 'NoSuchKey' || code === 'NoSuchBucket'
}
