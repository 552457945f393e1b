import type { Express, Request } from 'express'
import { type ApiError, errorAnswer } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import { validate, inputOf } from '@quartet/core/validate'
import { z } from 'zod'
import type { ClientTokenUploads } from '../domain/client-token-uploads.ts'
import { clientIp, clientKey, type Services } from './services.ts'
import { acceptBody, lingerAfterAnswer, uploadBody } from './upload-connection.ts'

/** Where `VERCEL_BLOB_API_URL` (or `NEXT_PUBLIC_VERCEL_BLOB_API_URL`) points the client: `<origin>/api/blob/vercel`. */
export const VERCEL_BLOB_API_PATH = '/api/blob/vercel'

export const ZGenerateClientToken = z
  .object({
    type: z.literal('blob.generate-client-token'),
    payload: z.object({
      pathname: z.string().min(1).max(950),
      clientPayload: z.string().max(10_000).nullable().optional(),
      multipart: z.boolean().optional(),
    }),
  })
  .strict()
export type TGenerateClientToken = z.infer<typeof ZGenerateClientToken>

export const ZGenerateClientTokenResponse = z.object({
  type: z.literal('blob.generate-client-token'),
  clientToken: z.string(),
})

export const ZVercelPutResponse = z.object({
  url: z.string(),
  downloadUrl: z.string(),
  pathname: z.string(),
  contentType: z.string(),
  contentDisposition: z.string(),
  etag: z.string(),
})

const tokenSchemas = { body: ZGenerateClientToken }

export const vercelBlobOperations: OperationDoc[] = [
  {
    method: 'put',
    path: `${VERCEL_BLOB_API_PATH}/`,
    operationId: 'vercelBlobPut',
    summary:
      "The Vercel Blob client's PUT (`?pathname=`, `Authorization: Bearer <clientToken from /api/upload>`); the answer's pathname is the one to list in /api/share, with the proof in its url's fragment (`#proof=`)",
    tags: ['public'],
    responses: {
      200: { description: 'stored', schema: ZVercelPutResponse },
      400: { description: 'pathname does not match the token, or the body is not the declared size' },
      403: { description: 'client token missing, invalid or expired (`Token expired`)' },
      413: { description: "the body exceeded the token's maximumSizeInBytes" },
    },
  },
]

/** The words the Vercel client knows (its getBlobError), so it reports and retries as it does against Vercel. */
function forVercelClient(error: ApiError): { status: number; code: string; message: string } {
  switch (error.code) {
    case 'upload_token_expired':
      return { status: 403, code: 'client_token_expired', message: 'Token expired' }
    case 'upload_token_invalid':
      return { status: 403, code: 'forbidden', message: error.message }
    case 'file_too_large': {
      const max = error.details?.maximumSizeInBytes
      return {
        status: 413,
        code: 'file_too_large',
        message: `the file length cannot be greater than ${typeof max === 'number' ? max : 'the permitted size'}`,
      }
    }
    case 'service_unavailable':
      return { status: 503, code: 'service_unavailable', message: error.message }
    default:
      return error.status >= 500
        ? { status: error.status, code: 'unknown_error', message: 'internal error' }
        : { status: error.status, code: 'bad_request', message: error.message }
  }
}

/**
 * The Vercel Blob client against pickup-share (issue 16 item 3): `/api/upload` also answers the
 * client's `blob.generate-client-token` event (registered before the ordinary handler, which
 * takes every other body), and the blob API's PUT lives under VERCEL_BLOB_API_PATH.
 */
export function registerVercelBlob(app: Express, s: Services & { clientTokens: ClientTokenUploads }): void {
  const generate = validate(tokenSchemas)
  app.post('/api/upload', (req, res, next) => {
    const body = req.body as { type?: unknown } | undefined
    if (body?.type !== 'blob.generate-client-token') return next()
    return generate(req, res, async (err?: unknown) => {
      if (err) return next(err)
      try {
        const { payload } = inputOf(tokenSchemas, req).body
        const granted = await s.clientTokens.generate({
          pathname: payload.pathname,
          clientPayload: payload.clientPayload ?? null,
          multipart: payload.multipart ?? false,
          clientIp: clientIp(req),
          clientKey: clientKey(req, s),
        })
        res
          .set('Cache-Control', 'no-store')
          .json({ type: 'blob.generate-client-token', clientToken: granted.clientToken })
      } catch (e) {
        next(e)
      }
    })
  })

  app.put(VERCEL_BLOB_API_PATH, async (req: Request, res) => {
    res.set('Connection', 'close')
    try {
      const length = req.headers['content-length']
      const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : null
      const pathname = typeof req.query.pathname === 'string' ? req.query.pathname : undefined
      const stored = await s.clientTokens.receive(
        req.get('authorization'),
        pathname,
        () => {
          acceptBody(req, res)
          return uploadBody(req)
        },
        declared,
      )
      const contentType = req.get('x-content-type') ?? 'application/octet-stream'
      const name = stored.pathname.split('/').pop() ?? 'file'
      // Not a public link: files leave pickup-share only through a share (list `pathname` in /api/share).
      const url = new URL(
        `${VERCEL_BLOB_API_PATH}/?pathname=${encodeURIComponent(stored.pathname)}`,
        `${req.protocol}://${req.get('host')}`,
      ).href
      res.removeHeader('Connection')
      res.set('Cache-Control', 'no-store').json({
        // The client hands back only these fields: the uploader's proof for /api/share rides in the
        // url's fragment, which no browser sends anywhere.
        url: `${url}#proof=${stored.proof}`,
        downloadUrl: url,
        pathname: stored.pathname,
        contentType,
        contentDisposition: `attachment; filename="${name}"`,
        etag: `"${stored.size}-${name}"`,
      })
    } catch (err) {
      lingerAfterAnswer(req, res)
      const { error, body } = errorAnswer('code', err, req as never)
      const mapped = forVercelClient(error)
      if (error.headers) res.set(error.headers)
      const envelope = body as { error: Record<string, unknown> }
      res
        .status(mapped.status)
        .json({ error: { ...envelope.error, code: mapped.code, message: mapped.message } })
    }
  })
}
