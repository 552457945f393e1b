import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { IssuedUploadsPort } from './ports.ts'
import type { ResumableDataPort } from './ports.ts'
import type { StorageInstances } from './storage-instances.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { UploadTokens } from './upload-token.ts'

/** The kinds a tus upload can go to: stores whose bytes pass through this server or a shared bucket. */
export const RESUMABLE_KINDS = ['blob', 'bucket'] as const

/**
 * Resumable uploads (tus 1.0, issue 16): a tus upload is created only with a permission from
 * /api/upload — its X-Upload-Token, for exactly the declared length — and stored under the
 * permission's pathname, so the finished upload is the file `/api/share` accepts as today. The
 * permission is in use from creation until `resumableUntil`; an upload unfinished by then is
 * removed and its reservation given back (sweep), as is one the client terminates.
 */
export class ResumableUploads {
  constructor(
    private readonly d: {
      uploads: IssuedUploadsPort
      instances: StorageInstances
      reservations: UploadReservations
      tokens: UploadTokens
      data: ResumableDataPort
      clock: Clock
      logger: Logger
      /** How long a tus upload may be resumed after its creation (TUS_EXPIRY_SECONDS). */
      expiryMs: number
    },
  ) {}

  get expiryMs(): number {
    return this.d.expiryMs
  }

  /**
   * A tus creation request: the permission must be valid, for this instance, and for exactly
   * `uploadLength` bytes; it is then used up (one permission, one upload). Returns the pathname,
   * which is the upload's id in the store.
   */
  async begin(instance: string, token: string | undefined, uploadLength: number | null): Promise<string> {
    const claims = this.d.tokens.verify(token)
    if (claims.instance !== instance)
      throw new ApiError('upload_token_invalid', 'the upload token is for another storage instance')
    const driver = await this.d.instances.driver(instance)
    if (!driver || !(RESUMABLE_KINDS as readonly string[]).includes(driver.kind))
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    if (uploadLength === null)
      throw new ApiError('bad_request', 'Upload-Length is required (deferred lengths are not accepted)')
    const size = claims.size ?? claims.maxBytes
    if (size !== null && uploadLength > size)
      throw new ApiError(
        'file_too_large',
        `the permission is for ${size} bytes; Upload-Length is ${uploadLength}`,
        {
          maximumSizeInBytes: size,
        },
      )
    if (claims.size !== null && uploadLength !== claims.size)
      throw new ApiError(
        'size_mismatch',
        `the permission is for exactly ${claims.size} bytes; Upload-Length is ${uploadLength}`,
      )
    const now = this.d.clock.now()
    const until = new Date(now.getTime() + this.d.expiryMs)
    if (!(await this.d.uploads.markResumableStarted(instance, claims.pathname, now, until)))
      throw new ApiError(
        'upload_exists',
        'this permission has been used for an upload already (resume it at its upload URL, or ask for a new permission)',
      )
    return claims.pathname
  }

  /** The store could not create the upload: the permission is unused again. */
  async creationFailed(instance: string, pathname: string): Promise<void> {
    await this.d.uploads.clearResumableStart(instance, pathname)
  }

  /** The last byte arrived: the file stays until shared or orphaned, no longer as a tus upload. */
  async finished(instance: string, pathname: string): Promise<void> {
    const [row] = await this.d.uploads.issuedUploads([{ storeInstance: instance, pathname }])
    if (row) await this.d.uploads.clearResumable(row.id)
  }

  /** The client terminated an unfinished upload (tus termination): its reservation goes back now. */
  async terminated(instance: string, pathname: string): Promise<void> {
    const [row] = await this.d.uploads.issuedUploads([{ storeInstance: instance, pathname }])
    if (!row || row.shareId !== null || row.resumableUntil === null) return
    await this.d.reservations.storeHadNoRoom(instance, pathname)
  }

  /** Past its expiry, or gone already (swept, or never a resumable upload of this store). */
  async expired(instance: string, pathname: string): Promise<boolean> {
    const [row] = await this.d.uploads.issuedUploads([{ storeInstance: instance, pathname }])
    if (!row || row.resumableUntil === null) return !row
    return row.resumableUntil.getTime() <= this.d.clock.now().getTime()
  }

  /**
   * Unfinished tus uploads past their expiry: partial data removed, permission deleted and its
   * reservation given back, once (the row's delete decides who releases). Returns how many.
   */
  async sweepExpired(): Promise<number> {
    let expired = 0
    for (const row of await this.d.uploads.expiredResumableUploads(this.d.clock.now())) {
      try {
        if ((await this.d.data.expireIfUnfinished(row.storeInstance, row.pathname)) === 'finished') {
          // Finished (the finish hook did not get to record it): kept until shared or orphaned.
          await this.d.uploads.clearResumable(row.id)
          continue
        }
        if (await this.d.uploads.deleteIssuedUploadIfUnshared(row.id)) {
          await this.d.reservations.releaseRow(row)
          expired++
        }
      } catch (err) {
        this.d.logger.warn(
          { err, store: row.storeInstance },
          'expiring a resumable upload failed; next sweep retries',
        )
      }
    }
    return expired
  }
}
