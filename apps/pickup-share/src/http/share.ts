import { pipeline } from 'node:stream/promises'
import { create as contentDisposition } from 'content-disposition'
import { Transform, type TransformCallback } from 'node:stream'
import type { Express, Request, Response } from 'express'
import type { OperationDoc } from '@quartet/core/openapi'
import { ApiError } from '@quartet/core/errors'
import { inputOf, validate } from '@quartet/core/validate'
import { z } from 'zod'
import {
  asciiFallbackName,
  downloadName,
  PREVIEW_POLICY,
  safeContentType,
  ZFileName,
  ZMediaType,
} from '../domain/filenames.ts'
import type { OpenDownload } from '../domain/shares.ts'
import { sendsDirectly } from '../domain/storage.ts'
import { clientKey, type Services } from './services.ts'
import { checkEncryptedSizes, ZShareEncryption } from './share-encryption.ts'
import { ZStoreKind } from './upload.ts'

const ZPickupCode = z.string().regex(/^\d{6,12}$/, 'must be 6 to 12 digits')
/** The pickup link's token (base64url of 128 random bits), from the link's fragment. */
const ZLinkToken = z.string().regex(/^[A-Za-z0-9_-]{22,64}$/, 'must be the token of a pickup link')

/** Either the typed code (guessing limits apply) or the link's token (never limited), not both. */
const eitherCodeOrToken = (v: { code?: string | undefined; token?: string | undefined }) =>
  (v.code === undefined) !== (v.token === undefined)
const EITHER_MESSAGE = 'give either code (the pickup code) or token (from the pickup link), not both'
const ZPathname = z.string().min(1).max(1024)

/**
 * A share's password as the sender sets it. The receiver may send it in a header, and header
 * values can carry no control characters and lose spaces at either end, so neither is allowed.
 */
export const ZSharePassword = z
  .string()
  .min(4, 'must be at least 4 characters')
  .max(128, 'must be at most 128 characters')
  .refine(
    (v) => ![...v].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f'),
    'must not contain control characters (tab, line breaks, …)',
  )
  .refine((v) => v.trim() === v, 'must not begin or end with a space')
/** A password as a receiver sends it: checked against the share's, never validated beyond size. */
const ZGivenPassword = z.string().min(1, 'must not be empty').max(1024)
/** The access grant a take with the right password returned (downloads of a protected share). */
const ZAccessGrant = z.string().min(1).max(200)
/** The header that carries a protected share's password on take and on every download. */
export const PASSWORD_HEADER = 'x-share-password'

export const ZShareFile = z
  .object({
    name: ZFileName,
    size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    type: ZMediaType,
    pathname: ZPathname,
    store: ZStoreKind,
    /**
     * The `proof` of the file's /api/upload answer (the Vercel client: `#proof=` of its `url`).
     * Optional, as seed 002's file entry has five fields: without it the file is shared only when
     * the request comes from the address its upload permission was issued to.
     */
    proof: z.string().min(1).max(200).optional(),
  })
  .strict()

export const ZCreateShare = z
  .object({
    files: z.array(ZShareFile).min(1, 'must list at least one file').max(100, 'must list at most 100 files'),
    expireDays: z.number().int().min(1).optional(),
    maxDownloads: z.number().int().min(1).nullable().optional(),
    limitSize: z.boolean().optional(),
    authCode: z.string().max(200).optional(),
    /** Protects the share: take and every download then need it (README "Password-protected shares"). */
    password: ZSharePassword.optional(),
    /** Encrypted in the browser (README "End-to-end encrypted shares"): the files are aes128gcm bodies. */
    encryption: ZShareEncryption.optional(),
  })
  .strict()
  .superRefine(checkEncryptedSizes)
export type TCreateShare = z.infer<typeof ZCreateShare>

export const ZTake = z
  .object({ code: ZPickupCode.optional(), token: ZLinkToken.optional(), password: ZGivenPassword.optional() })
  .strict()
  .refine(eitherCodeOrToken, EITHER_MESSAGE)

export const ZManifest = z.object({
  code: z.string(),
  files: z.array(z.object({ name: z.string(), size: z.number().int(), type: z.string(), path: z.string() })),
  createdAt: z.string(),
  expiresAt: z.string(),
})
export const ZTakeResponse = z.object({
  manifest: ZManifest,
  remaining: z.number().int().nullable(),
  /** Only for a protected share: the grant its downloads carry as `access` instead of the password. */
  access: z.object({ grant: z.string(), expiresAt: z.string() }).optional(),
  /** Only for an end-to-end encrypted share: how to decrypt it with the key the server never sees. */
  encryption: ZShareEncryption.optional(),
})

export const ZDownloadQuery = z
  .object({
    code: ZPickupCode.optional(),
    token: ZLinkToken.optional(),
    path: ZPathname,
    access: ZAccessGrant.optional(),
  })
  .strict()
  .refine(eitherCodeOrToken, EITHER_MESSAGE)

/** Download all: the share by its code or link token, no path. */
export const ZDownloadAllQuery = z
  .object({ code: ZPickupCode.optional(), token: ZLinkToken.optional(), access: ZAccessGrant.optional() })
  .strict()
  .refine(eitherCodeOrToken, EITHER_MESSAGE)

export const ZCreateShareResponse = z.object({
  code: z.string(),
  /** The pickup link's token: shown once (only its hash is kept). */
  token: z.string(),
  /** `<origin>/pickup#<token>`: the token stays in the fragment, which browsers never send. */
  link: z.string(),
})

/** The send page's check of an authorization code before any byte is uploaded. */
export const ZCheckAuthCode = z
  .object({
    authCode: z.string().max(200),
    unlimitedDownloads: z.boolean().optional(),
    limitSize: z.boolean().optional(),
  })
  .strict()
  .refine((v) => v.unlimitedDownloads || v.limitSize, 'ask for unlimitedDownloads and/or limitSize')
export const ZCheckAuthCodeResponse = z.object({
  ok: z.literal(true),
  scope: z.string(),
  expiresAt: z.string(),
})
const checkAuthCodeSchemas = { body: ZCheckAuthCode }

const shareSchemas = { body: ZCreateShare }
const takeSchemas = { body: ZTake }
const downloadSchemas = { query: ZDownloadQuery }
const downloadAllSchemas = { query: ZDownloadAllQuery }

/** A protected share's answers on take and on every download (README "Password-protected shares"). */
const PASSWORD_RESPONSES = {
  401: {
    description:
      'share_password_required: the share is protected and no password (X-Share-Password header, or the password field of take) nor a valid access grant came',
  },
  403: { description: 'share_password_wrong: the password is not right (spends the password budgets)' },
  429: {
    description:
      'too many failed attempts (Retry-After; details.reason address/throttle for codes, password_address/password_share for passwords)',
  },
}

export const shareOperations: OperationDoc[] = [
  {
    method: 'post',
    path: '/api/share',
    operationId: 'createShare',
    summary: 'Create a share from uploaded files and get its pickup code',
    tags: ['public'],
    request: shareSchemas,
    responses: {
      200: {
        description: 'the pickup code, and the pickup link with its token (shown once)',
        schema: ZCreateShareResponse,
      },
      400: {
        description:
          'invalid request, a file not issued here or without its proof (upload_not_issued, one answer for both), missing upload or size mismatch',
      },
      403: {
        description: 'unlimited requested without a usable authorization code, or unlimited mode is off',
      },
      409: { description: 'a file is already part of a share' },
      413: { description: 'an uploaded file is larger than allowed' },
    },
  },
  {
    method: 'post',
    path: '/api/auth-code/check',
    operationId: 'checkAuthCode',
    summary:
      'Whether an authorization code grants unlimited downloads and/or no size limit now (the send page asks before uploading); consumes nothing',
    tags: ['public'],
    request: checkAuthCodeSchemas,
    responses: {
      200: { description: 'the code is usable for what was asked', schema: ZCheckAuthCodeResponse },
      400: { description: 'invalid request' },
      403: {
        description:
          'unlimited_disabled, auth_code_missing, auth_code_invalid, auth_code_used, auth_code_expired, auth_code_revoked or auth_code_scope',
      },
    },
  },
  {
    method: 'post',
    path: '/api/take',
    operationId: 'take',
    summary:
      'Exchange a pickup code (guessing limits apply) or a pickup link token (never limited) for the file list and remaining downloads',
    tags: ['public'],
    request: takeSchemas,
    responses: {
      200: { description: 'the manifest', schema: ZTakeResponse },
      404: { description: 'unknown code or link (share_not_found)' },
      410: {
        description:
          'the share is used up (share_used_up) or expired (share_expired, details.expiresAt); not a wrong guess',
      },
      ...PASSWORD_RESPONSES,
    },
  },
  {
    method: 'get',
    path: '/api/download',
    operationId: 'download',
    summary:
      'Download one file of a share by its code or link token; Range/If-Range resume it (one download per transfer, README "Downloads: what one download buys")',
    tags: ['public'],
    request: downloadSchemas,
    responses: {
      200: {
        description: 'the file, as an attachment (Accept-Ranges: bytes, a strong ETag)',
        contentType: 'application/octet-stream',
        schema: z.string(),
      },
      206: {
        description: 'one range of the file (Content-Range)',
        contentType: 'application/octet-stream',
        schema: z.string(),
      },
      404: { description: 'unknown code, or a path not in the share' },
      410: { description: 'used up (share_used_up) or expired (share_expired)' },
      416: { description: 'the range lies outside the file (Content-Range: bytes */size); counts nothing' },
      ...PASSWORD_RESPONSES,
    },
  },
  {
    method: 'get',
    path: '/api/preview',
    operationId: 'preview',
    summary:
      'Show one file of a share inline: only text/plain, PNG/JPEG/GIF/WebP/AVIF, audio, video and PDF below the admin size, while previews are on. Counted as this receiver\'s download of the file; the Download after it within the resume window is free (README "Previews")',
    tags: ['public'],
    request: downloadSchemas,
    responses: {
      200: {
        description:
          'the file inline, Content-Type from the allow list (text as text/plain; charset=utf-8), nosniff, CSP default-src none + sandbox',
        contentType: 'application/octet-stream',
        schema: z.string(),
      },
      206: {
        description: 'one range (media seeking)',
        contentType: 'application/octet-stream',
        schema: z.string(),
      },
      404: { description: 'unknown code, used up, or a path not in the share' },
      415: {
        description:
          'preview_unavailable: previews are off, the type is not on the list (html, svg, …: download it) or the file is above the size',
      },
      416: { description: 'the range lies outside the file' },
      ...PASSWORD_RESPONSES,
    },
  },
  {
    method: 'head',
    path: '/api/download',
    operationId: 'downloadHead',
    summary: 'The headers a GET would get (size, ETag, ranges); counts no download',
    tags: ['public'],
    request: downloadSchemas,
    responses: {
      200: { description: 'the headers of the whole file' },
      206: { description: 'the headers of the range' },
      404: { description: 'unknown code, used up, or a path not in the share' },
      416: { description: 'the range lies outside the file' },
      ...PASSWORD_RESPONSES,
    },
  },
  {
    method: 'get',
    path: '/api/download-all',
    operationId: 'downloadAll',
    summary:
      'Download every file of a share as one streamed ZIP (stored entries, ZIP64 when needed), counted as ONE download and resumable with Range/If-Range like a file; given back when no byte was sent',
    tags: ['public'],
    request: downloadAllSchemas,
    responses: {
      200: {
        description:
          'the archive, as an attachment with its exact Content-Length, Accept-Ranges: bytes and a strong ETag',
        contentType: 'application/zip',
        schema: z.string(),
      },
      404: { description: 'unknown code or link (share_not_found)' },
      410: { description: 'the share is used up (share_used_up) or expired (share_expired)' },
      ...PASSWORD_RESPONSES,
      206: {
        description: 'one range of the archive (a cut archive resumed), counted by the same rule',
        contentType: 'application/zip',
        schema: z.string(),
      },
      416: {
        description: 'the range lies outside the archive (Content-Range: bytes */size); counts nothing',
      },
      502: { description: 'the first file could not be read from storage; nothing was counted' },
      503: { description: 'a store cannot be reached; nothing was counted (Retry-After)' },
    },
  },
  {
    method: 'head',
    path: '/api/download-all',
    operationId: 'downloadAllHead',
    summary: 'The headers the archive would get (its exact length); counts no download',
    tags: ['public'],
    request: downloadAllSchemas,
    responses: {
      200: { description: 'the headers of the archive' },
      404: { description: 'unknown code or link' },
      410: { description: 'used up or expired' },
      ...PASSWORD_RESPONSES,
    },
  },
]

export function registerShare(app: Express, s: Services): void {
  app.post('/api/share', validate(shareSchemas), async (req, res) => {
    const { body } = inputOf(shareSchemas, req)
    const { code, token } = await s.shares.createShare({ ...body, clientKey: clientKey(req, s) })
    const link = `${req.protocol}://${req.get('host')}/pickup#${token}`
    res.set('Cache-Control', 'no-store').json({ code, token, link })
  })

  app.post('/api/auth-code/check', validate(checkAuthCodeSchemas), async (req, res) => {
    const { body } = inputOf(checkAuthCodeSchemas, req)
    const needs: Array<'downloads' | 'size'> = []
    if (body.unlimitedDownloads) needs.push('downloads')
    if (body.limitSize) needs.push('size')
    const { scope, expiresAt } = await s.shares.checkUnlimited(body.authCode, needs)
    res.set('Cache-Control', 'no-store').json({ ok: true, scope, expiresAt: expiresAt.toISOString() })
  })

  app.post('/api/take', validate(takeSchemas), async (req, res) => {
    const { body } = inputOf(takeSchemas, req)
    const unlock = { password: body.password ?? passwordOf(req) }
    const { manifest, remaining, access, encryption } =
      body.token !== undefined
        ? await s.shares.takeByLink(body.token, clientKey(req, s), unlock)
        : await s.shares.take(body.code!, clientKey(req, s), unlock)
    res.set('Cache-Control', 'no-store').json({
      manifest: {
        ...manifest,
        createdAt: manifest.createdAt.toISOString(),
        expiresAt: manifest.expiresAt.toISOString(),
      },
      remaining,
      // A share without a password answers exactly as before (no `access` key at all).
      ...(access ? { access: { grant: access.grant, expiresAt: access.expiresAt.toISOString() } } : {}),
      ...(encryption ? { encryption } : {}),
    })
  })

  // HEAD first: express would answer it with the GET route. A HEAD gets the GET's headers
  // (206/416 for a Range too) and counts nothing.
  app.head('/api/download', validate(downloadSchemas), (req, res) => download(req, res, true))
  app.get('/api/download', validate(downloadSchemas), (req, res) => download(req, res, false))
  // Previews (README "Previews"): the same counted transfer, served inline from an allow list.
  app.head('/api/preview', validate(downloadSchemas), (req, res) => download(req, res, true, true))
  app.get('/api/preview', validate(downloadSchemas), (req, res) => download(req, res, false, true))

  async function download(req: Request, res: Response, head: boolean, preview = false): Promise<void> {
    const { query } = inputOf(downloadSchemas, req)
    const receiver = clientKey(req, s)
    const request = {
      range: req.get('range'),
      ifRange: req.get('if-range'),
      head,
      preview,
      unlock: { password: passwordOf(req), access: query.access },
    }
    const file =
      query.token !== undefined
        ? await s.shares.openDownloadByLink(query.token, query.path, receiver, request)
        : await s.shares.openDownload(query.code!, query.path, receiver, request)
    const length = file.range ? file.range.end - file.range.start + 1 : file.size
    res.status(file.range ? 206 : 200).set({
      'Accept-Ranges': 'bytes',
      ETag: file.etag,
      'Content-Type': file.preview ? file.preview.contentType : safeContentType(file.type),
      'Content-Length': String(length),
      'Content-Disposition': file.preview ? inlineHeader(file.name) : attachmentHeader(file.name),
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
      ...(file.preview
        ? {
            'Content-Security-Policy': PREVIEW_POLICY,
            'Cross-Origin-Resource-Policy': 'same-origin',
          }
        : {}),
      ...(file.range ? { 'Content-Range': `bytes ${file.range.start}-${file.range.end}/${file.size}` } : {}),
    })
    await sendBody(req, res, file)
  }

  app.head('/api/download-all', validate(downloadAllSchemas), (req, res) => downloadAll(req, res, true))
  app.get('/api/download-all', validate(downloadAllSchemas), (req, res) => downloadAll(req, res, false))

  // Downloads are read, never posted to: 405 with the methods there are (RFC 9110 §15.5.6).
  app.all(['/api/download', '/api/download-all', '/api/preview'], (req) => {
    throw new ApiError(
      'method_not_allowed',
      `${req.method} is not allowed here; use GET or HEAD`,
      undefined,
      {
        headers: { Allow: 'GET, HEAD' },
      },
    )
  })

  async function downloadAll(req: Request, res: Response, head: boolean): Promise<void> {
    const { query } = inputOf(downloadAllSchemas, req)
    const by = query.token !== undefined ? { token: query.token } : { code: query.code! }
    const request = {
      range: req.get('range'),
      ifRange: req.get('if-range'),
      head,
      unlock: { password: passwordOf(req), access: query.access },
    }
    const zip = await s.shares.openZip(by, clientKey(req, s), request)
    const length = zip.range ? zip.range.end - zip.range.start + 1 : zip.size
    res.status(zip.range ? 206 : 200).set({
      'Accept-Ranges': 'bytes',
      ETag: zip.etag,
      'Content-Type': 'application/zip',
      'Content-Length': String(length),
      ...(zip.range ? { 'Content-Range': `bytes ${zip.range.start}-${zip.range.end}/${zip.size}` } : {}),
      'Content-Disposition': attachmentHeader(zip.name),
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
    })
    await sendBody(req, res, zip)
  }

  /** Streams an opened download and tells it, once the response ended, how many bytes left. */
  async function sendBody(req: Request, res: Response, file: OpenDownload): Promise<void> {
    if (!file.stream) {
      res.end()
      return
    }
    // The bytes handed to the connection: what the transfer rule counts as sent. Each chunk is
    // first taken from the download's budget (which may wait for a lease, or cut the response).
    let sent = 0
    const handed = (bytes: number): Promise<void> | undefined => {
      const taken = file.take(bytes)
      if (!taken) {
        sent += bytes
        return undefined
      }
      return taken.then(() => {
        sent += bytes
      })
    }
    res.on('close', () => {
      file.done(sent).catch((err) => req.log.error({ err }, 'download bookkeeping failed'))
    })
    try {
      if (sendsDirectly(file.stream)) {
        await file.stream.sendTo(res, handed)
        res.end()
      } else await pipeline(file.stream, new Metered(handed), res)
    } catch (err) {
      // The client went away or the store broke mid-stream; the response is already under way.
      req.log.warn({ err }, 'download stream ended early')
      res.destroy()
    }
  }
}

/** Lets each chunk pass once `taken` allowed its size (at once, or when its promise resolves). */
class Metered extends Transform {
  constructor(private readonly taken: (bytes: number) => Promise<void> | undefined) {
    super()
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    const waiting = this.taken(chunk.length)
    if (!waiting) done(null, chunk)
    else waiting.then(() => done(null, chunk), done)
  }
}

/**
 * The `X-Share-Password` header: the password's UTF-8 bytes as sent (curl and wget send a
 * non-ASCII password that way; Node hands them over as latin1, one character a byte). Absent or
 * empty: none.
 */
function passwordOf(req: Request): string | undefined {
  const raw = req.headers[PASSWORD_HEADER]
  const value = Array.isArray(raw) ? raw[0] : raw
  if (!value) return undefined
  if (value.length > 1024) throw new ApiError('bad_request', `${PASSWORD_HEADER}: must be at most 1024 bytes`)
  return Buffer.from(value, 'latin1').toString('utf8')
}

/** RFC 6266: an ASCII `filename` for every client, plus `filename*` (UTF-8) when the name needs it. */
export function attachmentHeader(name: string): string {
  const shown = downloadName(name)
  return contentDisposition(shown, { type: 'attachment', fallback: asciiFallbackName(shown) })
}

/** A preview is shown, not saved; its name is still the one a Save As offers. */
function inlineHeader(name: string): string {
  const shown = downloadName(name)
  return contentDisposition(shown, { type: 'inline', fallback: asciiFallbackName(shown) })
}
