import type { Readable } from 'node:stream'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { IssuedUploadsPort } from './ports.ts'
import { ZFileName } from './filenames.ts'
import type { SettingsService } from './settings.ts'
import type { UploadPermissions } from './upload-permissions.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { UploadTokens } from './upload-token.ts'

/** The store id inside our client tokens (the Vercel client reads it from the token; no `_` allowed). */
const STORE_ID = 'pickupshare'
const PREFIX = `vercel_blob_client_${STORE_ID}_`

export interface ClientTokenRequest {
  /** The pathname the client will upload to (its `upload(pathname, …)`). */
  pathname: string
  /** The app's `clientPayload`: JSON `{"size":…,"type":…}` declares the file; anything else is ignored. */
  clientPayload: string | null
  multipart: boolean
  clientIp: string | null
  clientKey: string
}

/**
 * Uploads from the Vercel Blob browser client (`upload(pathname, file, { access: 'public',
 * handleUploadUrl: '/api/upload' })`, issue 16 item 3). Its handshake asks /api/upload for a
 * client token (`blob.generate-client-token`); we grant an ordinary upload permission on the blob
 * store and wrap its signed token the way Vercel's tokens look (`vercel_blob_client_<store>_<…>`),
 * bound to the client's pathname, the size cap and the expiry. The client then PUTs the body to
 * `VERCEL_BLOB_API_URL/?pathname=…` with it. The client declares no size, so the permission
 * reserves the site's maximum (or the `clientPayload` size) and shrinks to the real size when the
 * body has arrived. The answer's `pathname` is the stored pathname, which `/api/share` takes.
 */
export class ClientTokenUploads {
  constructor(
    private readonly d: {
      permissions: Pick<UploadPermissions, 'requestUpload' | 'receiveBlobUpload'>
      uploads: Pick<IssuedUploadsPort, 'issuedUploads'>
      reservations: UploadReservations
      settings: SettingsService
      tokens: UploadTokens
      clock: Clock
    },
  ) {}

  async generate(
    req: ClientTokenRequest,
  ): Promise<{ clientToken: string; maximumSizeInBytes: number; pathname: string }> {
    if (req.multipart)
      throw new ApiError(
        'bad_request',
        'multipart client uploads are not supported: upload with multipart: false',
      )
    if (req.pathname.length === 0 || req.pathname.length > 950)
      throw new ApiError('bad_request', 'payload.pathname: 1 to 950 characters')
    const name = ZFileName.safeParse(req.pathname.split('/').pop() ?? '')
    if (!name.success)
      throw new ApiError(
        'bad_request',
        `payload.pathname: ${name.error.issues[0]?.message ?? 'invalid name'}`,
      )
    const declared = declaredFile(req.clientPayload)
    const s = await this.d.settings.get()
    const size = declared.size ?? s.maxFileSizeBytes
    const grant = await this.d.permissions.requestUpload({
      store: 'blob',
      name: name.data,
      size,
      type: declared.type ?? 'application/octet-stream',
      clientIp: req.clientIp,
      clientKey: req.clientKey,
    })
    const instance = grant.resumable?.instance ?? 'blob'
    const cap = grant.options.maximumSizeInBytes ?? size
    const token = this.d.tokens.sign({
      instance,
      pathname: grant.pathname,
      // A declared size is exact; otherwise any size up to the cap (the reservation shrinks later).
      size: declared.size,
      maxBytes: Math.min(size, cap),
      expiresAt: grant.expiresAt,
      allowOverwrite: false,
      alias: req.pathname,
    })
    return {
      clientToken: PREFIX + Buffer.from(token).toString('base64'),
      maximumSizeInBytes: Math.min(size, cap),
      pathname: grant.pathname,
    }
  }

  /** The client's PUT: the token must be ours, unexpired and for this pathname; the body streams to the blob store. */
  async receive(
    authorization: string | undefined,
    clientPathname: string | undefined,
    acceptBody: () => Readable,
    declaredLength: number | null,
  ): Promise<{ pathname: string; size: number; proof: string }> {
    const bearer = /^Bearer (.+)$/.exec(authorization ?? '')?.[1]
    if (!bearer?.startsWith(PREFIX)) throw new ApiError('upload_token_invalid', 'a client token is required')
    const token = Buffer.from(bearer.slice(PREFIX.length), 'base64').toString('utf8')
    const claims = this.d.tokens.verify(token)
    if (claims.alias === undefined) throw new ApiError('upload_token_invalid', 'not a client token')
    if (clientPathname !== claims.alias)
      throw new ApiError(
        'bad_request',
        `"pathname" ${JSON.stringify(clientPathname ?? '')} does not match the token payload`,
      )
    const { pathname, size } = await this.d.permissions.receiveBlobUpload(token, acceptBody, declaredLength, {
      kind: 'blob',
    })
    if (claims.size === null) {
      // No size was declared: the permission becomes one for exactly what arrived.
      const [row] = await this.d.uploads.issuedUploads([{ storeInstance: claims.instance, pathname }])
      if (row && row.shareId === null) await this.d.reservations.shrink(row, size)
    }
    return { pathname, size, proof: this.d.tokens.proofOf(claims.instance, pathname) }
  }
}

function declaredFile(clientPayload: string | null): { size: number | null; type: string | null } {
  if (!clientPayload) return { size: null, type: null }
  try {
    const p = JSON.parse(clientPayload) as { size?: unknown; type?: unknown }
    return {
      size: Number.isSafeInteger(p.size) && (p.size as number) >= 0 ? (p.size as number) : null,
      type: typeof p.type === 'string' && /^[\w.+-]+\/[\w.+-]+$/.test(p.type) ? p.type : null,
    }
  } catch {
    return { size: null, type: null }
  }
}
