import { randomUUID } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { AuthCodes } from './auth-codes.ts'
import { choosePathname } from './filenames.ts'
import type { IssuedUploadsPort } from './ports.ts'
import { RESUMABLE_KINDS } from './resumable-uploads.ts'
import type { SettingsService } from './settings.ts'
import type { StoreKind, UploadPermission } from './storage.ts'
import type { StorageInstances } from './storage-instances.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { UploadClaims, UploadTokens } from './upload-token.ts'

export interface UploadRequest {
  store: StoreKind
  name: string
  size: number
  type: string
  limitSize?: boolean | undefined
  authCode?: string | undefined
  clientIp: string | null
  /** The client as limits count it (addressKey). */
  clientKey: string
}

export interface UploadGrant {
  store: StoreKind
  pathname: string
  upload: UploadPermission
  options: { allowOverwrite: false; maximumSizeInBytes: number | null }
  expiresAt: Date
  /** blob and bucket: the same permission for a resumable (tus) upload to this instance. */
  resumable?: { instance: string; token: string }
  /** The uploader's proof: /api/share takes the file only with it (UploadTokens.proofOf). */
  proof: string
}

export interface UploadPermissionsDeps {
  uploads: Pick<IssuedUploadsPort, 'recordIssuedUpload' | 'markUploadStarted' | 'clearUploadStarted'>
  instances: Pick<StorageInstances, 'driver'>
  reservations: UploadReservations
  settings: SettingsService
  authCodes: AuthCodes
  tokens: UploadTokens
  clock: Clock
  logger: Logger
  uploadTtlSeconds: number
}

/** Upload permissions, and the uploads our own server receives (blob, repo) under them. */
export class UploadPermissions {
  constructor(private readonly d: UploadPermissionsDeps) {}

  /**
   * The send page's check before the first byte: whether `code` grants what the share will ask
   * (unlimited downloads and/or no size limit) now. Consumes nothing; the share still decides.
   */
  async checkUnlimited(code: string | undefined, needs: Array<'downloads' | 'size'>) {
    const record = await this.d.authCodes.requireUnlimited(await this.d.settings.get(), code, needs)
    return { scope: record.scope, expiresAt: record.expiresAt }
  }

  async requestUpload(req: UploadRequest): Promise<UploadGrant> {
    const s = await this.d.settings.get()
    let maxBytes: number | null = s.maxFileSizeBytes
    let authCodeId: string | null = null
    if (req.limitSize) {
      authCodeId = (await this.d.authCodes.requireUnlimited(s, req.authCode, ['size'])).id
      maxBytes = null
    } else if (req.size > s.maxFileSizeBytes) {
      throw new ApiError('file_too_large', `files may be at most ${s.maxFileSizeBytes} bytes`, {
        maximumSizeInBytes: s.maxFileSizeBytes,
      })
    }
    // The permission limits, then an enabled instance with room: the declared size is reserved
    // there and in the client's and everyone's allowance (each atomic).
    const driver = await this.d.reservations.reserve(req.store, req.size, req.clientKey)
    const abandon = () => this.d.reservations.abandon(driver, req.size, req.clientKey)
    const cap = driver.maxObjectBytes
    if (cap !== undefined) {
      if (req.size > cap) {
        await abandon()
        throw new ApiError('file_too_large', `the ${driver.kind} store takes files of at most ${cap} bytes`, {
          maximumSizeInBytes: cap,
        })
      }
      maxBytes = maxBytes === null ? cap : Math.min(maxBytes, cap)
    }
    const pathname = choosePathname(req.name)
    const grantedAt = this.d.clock.now()
    const expiresAt = new Date(grantedAt.getTime() + this.d.uploadTtlSeconds * 1000)
    // A client-direct upload (a presigned bucket URL) must begin before its unused reservation may
    // be released; this server sees the others begin and refuses them once it was.
    const beginBy = this.d.reservations.beginBy(grantedAt)
    const direct = driver.kind === 'bucket' && beginBy < expiresAt
    let upload: UploadPermission
    try {
      upload = await driver.issueUpload({
        pathname,
        type: req.type,
        size: req.size,
        maxBytes,
        expiresAt: direct ? beginBy : expiresAt,
        allowOverwrite: false,
      })
    } catch (err) {
      await abandon()
      throw err
    }
    // The permission row carries the reservation from here on (UploadReservations releases it).
    try {
      await this.d.uploads.recordIssuedUpload({
        id: randomUUID(),
        store: driver.kind,
        storeInstance: driver.instance,
        pathname,
        name: req.name,
        size: req.size,
        type: req.type,
        maxBytes,
        authCodeId,
        clientIp: req.clientIp,
        clientKey: req.clientKey,
        createdAt: grantedAt,
      })
    } catch (err) {
      await abandon()
      throw err
    }
    const resumable = (RESUMABLE_KINDS as readonly string[]).includes(driver.kind)
      ? {
          instance: driver.instance,
          token: this.d.tokens.sign({
            instance: driver.instance,
            pathname,
            size: req.size,
            maxBytes,
            expiresAt,
            allowOverwrite: false,
          }),
        }
      : undefined
    return {
      store: driver.kind,
      pathname,
      upload,
      options: { allowOverwrite: false, maximumSizeInBytes: maxBytes },
      expiresAt,
      ...(resumable ? { resumable } : {}),
      proof: this.d.tokens.proofOf(driver.instance, pathname),
    }
  }

  /**
   * PUT /api/blob/upload and /api/repo/upload (stores our own server writes to): the token names
   * the pathname, the instance and the declared size. A body of any other length is refused: a
   * declared Content-Length before anything is read, a streamed one at the first byte too many
   * (or when it ends short), and nothing is kept.
   */
  async receiveBlobUpload(
    token: string | undefined,
    /**
     * Called once the upload is accepted: the body to read. Nothing of it is read before (an HTTP
     * client waiting for `100 Continue` gets it then).
     */
    acceptBody: () => Readable,
    declaredLength: number | null,
    options: { kind?: 'blob' | 'repo' } = {},
  ) {
    const { claims, driver } = await this.checkBlobUpload(token, declaredLength, options.kind ?? 'blob')
    // From here the permission is in use: its reservation is not given back at expiry.
    const started = this.d.clock.now()
    if (!(await this.d.uploads.markUploadStarted(claims.instance, claims.pathname, started)))
      throw new ApiError(
        'upload_token_expired',
        'the upload permission is no longer valid; ask for a new one',
      )
    try {
      const { size } = await driver.put(claims.pathname, acceptBody(), {
        size: claims.size,
        maxBytes: claims.maxBytes,
        allowOverwrite: claims.allowOverwrite,
      })
      return { pathname: claims.pathname, size }
    } catch (err) {
      if (err instanceof ApiError && err.code === 'insufficient_storage') {
        // The store is full: the permission ends and its reservation is released now.
        await this.d.reservations
          .storeHadNoRoom(claims.instance, claims.pathname)
          .catch((e: unknown) => this.d.logger.warn({ err: e }, 'releasing a failed upload failed'))
        throw err
      }
      // Nothing was stored (or it belongs to an earlier upload): unused again, unless stored.
      await this.d.uploads.clearUploadStarted(claims.instance, claims.pathname, started).catch(() => {})
      throw err
    }
  }

  /**
   * What can be decided from the request's headers alone (token, instance, declared length), so
   * that an upload that would be refused is refused before its body is asked for (`100 Continue`).
   */
  async checkBlobUpload(token: string | undefined, declaredLength: number | null, kind: 'blob' | 'repo') {
    const claims = this.d.tokens.verify(token)
    const driver = await this.d.instances.driver(claims.instance)
    if (!driver || driver.kind !== kind)
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    if (declaredLength !== null) checkDeclaredLength(claims, declaredLength)
    return { claims, driver }
  }
}

/** A Content-Length other than the permission's size is refused before any byte is read. */
function checkDeclaredLength(claims: UploadClaims, declared: number): void {
  const max = claims.size ?? claims.maxBytes
  if (max !== null && declared > max)
    throw new ApiError(
      'file_too_large',
      claims.size !== null
        ? `Content-Length ${declared} is more than the ${claims.size} bytes the upload permission declared`
        : `the upload exceeds the limit of ${max} bytes`,
      { maximumSizeInBytes: max },
    )
  if (claims.size !== null && declared < claims.size)
    throw new ApiError(
      'size_mismatch',
      `Content-Length ${declared} is less than the ${claims.size} bytes the upload permission declared`,
    )
}
