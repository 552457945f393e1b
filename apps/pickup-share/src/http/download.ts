import { pipeline } from 'node:stream/promises'
import { Transform, type TransformCallback } from 'node:stream'
import { create as contentDisposition } from 'content-disposition'
import type { Express, Request, Response } from 'express'
import { ApiError } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import { inputOf, validate } from '@quartet/core/validate'
import { z } from 'zod'
import { asciiFallbackName, downloadName, PREVIEW_POLICY, safeContentType } from '../domain/filenames.ts'
import type { OpenDownload } from '../domain/share-downloads.ts'
import { sendsDirectly } from '../domain/storage.ts'
import { clientKey, type Services } from './services.ts'
import {
  EITHER_MESSAGE,
  eitherCodeOrToken,
  PASSWORD_RESPONSES,
  passwordOf,
  ZAccessGrant,
  ZLinkToken,
  ZPathname,
  ZPickupCode,
} from './share.ts'

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
const downloadSchemas = { query: ZDownloadQuery }
const downloadAllSchemas = { query: ZDownloadAllQuery }

/** Downloads of one file, its preview, and of the whole share as a ZIP. */
export const downloadOperations: OperationDoc[] = [
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

export function registerDownloads(app: Express, s: Services): void {
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
        ? await s.downloads.openDownloadByLink(query.token, query.path, receiver, request)
        : await s.downloads.openDownload(query.code!, query.path, receiver, request)
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
    const zip = await s.downloads.openZip(by, clientKey(req, s), request)
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
