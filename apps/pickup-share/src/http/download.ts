import { pipeline } from 'node:stream/promises'
import { Transform, type TransformCallback } from 'node:stream'
import { create as contentDisposition } from 'content-disposition'
import type { Express, Request, Response } from 'express'
import { ApiError } from '@quartet/core/errors'
import { publicAccess } from '@quartet/core/operation'
import { z } from 'zod'
import { asciiFallbackName, downloadName, PREVIEW_POLICY, safeContentType } from '../domain/filenames.ts'
import type { OpenDownload } from '../domain/share-downloads.ts'
import { sendsDirectly } from '../domain/storage.ts'
import { clientKey, defineRepresentation, expressOf } from './services.ts'
import {
  EITHER_MESSAGE,
  eitherCodeOrToken,
  PASSWORD_ERRORS,
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

const fileBody = (description: string) => ({
  description,
  contentType: 'application/octet-stream',
  schema: z.string(),
})
const zipBody = (description: string) => ({ description, contentType: 'application/zip', schema: z.string() })

const openErrors = {
  bad_request: 'invalid query, or an X-Share-Password header above 1024 bytes',
  share_not_found: 'unknown code or link',
  share_used_up: 'the share is used up',
  share_expired: 'the share expired',
  ...PASSWORD_ERRORS,
} as const
const fileErrors = {
  ...openErrors,
  file_not_found: 'a path not in the share',
  range_not_satisfiable: 'the range lies outside the file (Content-Range: bytes */size); counts nothing',
} as const

/** GET and HEAD of one file (`preview`: shown inline), each its own operation: a HEAD counts nothing. */
function fileOperation(head: boolean, preview: boolean) {
  const what = preview ? 'preview' : 'download'
  return defineRepresentation({
    name: `${what}${head ? 'Head' : ''}`,
    summary: head
      ? preview
        ? 'The headers a preview would get; counts nothing'
        : 'The headers a GET would get (size, ETag, ranges); counts no download'
      : preview
        ? 'Show one file of a share inline: only text/plain, PNG/JPEG/GIF/WebP/AVIF, audio, video and PDF below the admin size, while previews are on. Counted as this receiver\'s download of the file; the Download after it within the resume window is free (README "Previews")'
        : 'Download one file of a share by its code or link token; Range/If-Range resume it (one download per transfer, README "Downloads: what one download buys")',
    tags: ['public'],
    route: { method: head ? 'head' : 'get', path: `/api/${what}` },
    input: { query: ZDownloadQuery },
    responses: head
      ? {
          200: { description: 'the headers of the whole file' },
          206: { description: 'the headers of the range' },
        }
      : preview
        ? {
            200: fileBody(
              'the file inline, Content-Type from the allow list (text as text/plain; charset=utf-8), nosniff, CSP default-src none + sandbox',
            ),
            206: fileBody('one range (media seeking)'),
          }
        : {
            200: fileBody('the file, as an attachment (Accept-Ranges: bytes, a strong ETag)'),
            206: fileBody('one range of the file (Content-Range)'),
          },
    auth: publicAccess,
    errors: preview
      ? {
          ...fileErrors,
          preview_unavailable:
            'previews are off, the type is not on the list (html, svg, …: download it) or the file is above the size',
        }
      : fileErrors,
    async handler({ query }, ctx): Promise<OpenDownload> {
      const { req } = expressOf(ctx)
      const s = ctx.deps
      const receiver = clientKey(req, s)
      const request = {
        range: req.get('range'),
        ifRange: req.get('if-range'),
        head,
        preview,
        unlock: { password: passwordOf(req), access: query.access },
      }
      return query.token !== undefined
        ? await s.downloads.openDownloadByLink(query.token, query.path, receiver, request)
        : await s.downloads.openDownload(query.code!, query.path, receiver, request)
    },
    respond(file, req, res) {
      const length = file.range ? file.range.end - file.range.start + 1 : file.size
      ;(res as Response).status(file.range ? 206 : 200).set({
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
        ...(file.range
          ? { 'Content-Range': `bytes ${file.range.start}-${file.range.end}/${file.size}` }
          : {}),
      })
      void sendBody(req as Request, res as Response, file)
    },
  })
}

/** GET and HEAD of the whole share as one streamed ZIP. */
function archiveOperation(head: boolean) {
  return defineRepresentation({
    name: `downloadAll${head ? 'Head' : ''}`,
    summary: head
      ? 'The headers the archive would get (its exact length); counts no download'
      : 'Download every file of a share as one streamed ZIP (stored entries, ZIP64 when needed), counted as ONE download and resumable with Range/If-Range like a file; given back when no byte was sent',
    tags: ['public'],
    route: { method: head ? 'head' : 'get', path: '/api/download-all' },
    input: { query: ZDownloadAllQuery },
    responses: head
      ? {
          200: { description: 'the headers of the archive' },
          206: { description: 'the headers of the range' },
        }
      : {
          200: zipBody(
            'the archive, as an attachment with its exact Content-Length, Accept-Ranges: bytes and a strong ETag',
          ),
          206: zipBody('one range of the archive (a cut archive resumed), counted by the same rule'),
        },
    auth: publicAccess,
    errors: {
      ...openErrors,
      range_not_satisfiable:
        'the range lies outside the archive (Content-Range: bytes */size); counts nothing',
      storage_failed: 'the first file could not be read from storage; nothing was counted',
      service_unavailable: 'a store cannot be reached; nothing was counted (Retry-After)',
    },
    async handler({ query }, ctx): Promise<OpenDownload & { name: string }> {
      const { req } = expressOf(ctx)
      const by = query.token !== undefined ? { token: query.token } : { code: query.code! }
      const request = {
        range: req.get('range'),
        ifRange: req.get('if-range'),
        head,
        unlock: { password: passwordOf(req), access: query.access },
      }
      return ctx.deps.downloads.openZip(by, clientKey(req, ctx.deps), request)
    },
    respond(zip, req, res) {
      const length = zip.range ? zip.range.end - zip.range.start + 1 : zip.size
      ;(res as Response).status(zip.range ? 206 : 200).set({
        'Accept-Ranges': 'bytes',
        ETag: zip.etag,
        'Content-Type': 'application/zip',
        'Content-Length': String(length),
        ...(zip.range ? { 'Content-Range': `bytes ${zip.range.start}-${zip.range.end}/${zip.size}` } : {}),
        'Content-Disposition': attachmentHeader(zip.name),
        'X-Content-Type-Options': 'nosniff',
        'Cache-Control': 'no-store',
      })
      void sendBody(req as Request, res as Response, zip)
    },
  })
}

/**
 * Downloads of one file, its preview, and of the whole share as a ZIP. Each HEAD before its GET:
 * express would answer a HEAD with the GET route, and a HEAD gets the GET's headers (206/416 for
 * a Range too) and counts nothing.
 */
export const downloadOperations = [
  fileOperation(true, false),
  fileOperation(false, false),
  fileOperation(true, true),
  fileOperation(false, true),
  archiveOperation(true),
  archiveOperation(false),
] as const

export const [downloadHeadOperation, downloadOperation, previewHeadOperation, previewOperation] =
  downloadOperations
export const downloadAllHeadOperation = downloadOperations[4]
export const downloadAllOperation = downloadOperations[5]

/** The download paths, which are read and never posted to. */
export const DOWNLOAD_PATHS = ['/api/download', '/api/download-all', '/api/preview']

/**
 * Any other method on a download path: 405 with the methods there are (RFC 9110 §15.5.6). Not an
 * operation: it is the answer to every request no operation takes at these paths.
 */
export function registerDownloadMethods(app: Express): void {
  app.all(DOWNLOAD_PATHS, (req) => {
    throw new ApiError(
      'method_not_allowed',
      `${req.method} is not allowed here; use GET or HEAD`,
      undefined,
      {
        headers: { Allow: 'GET, HEAD' },
      },
    )
  })
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
