import type { Express, Response } from 'express'
import { type ApiError, errorAnswer } from '@quartet/core/errors'
import { publicAccess, reply } from '@quartet/core/operation'
import { operationHandler } from '@quartet/core/operation/express'
import { z } from 'zod'
import { clientToken } from './auth.ts'
import { clientIp, clientKey, define, defineRepresentation, expressOf, type Services } from './services.ts'
import { requestUploadOperation } from './upload.ts'
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

export const generateClientTokenOperation = define({
  name: 'generateClientToken',
  summary:
    "The Vercel Blob client's `blob.generate-client-token` event, posted to /api/upload: a client token for one upload",
  tags: ['public'],
  route: { method: 'post', path: '/api/upload' },
  input: { body: ZGenerateClientToken },
  responses: { 200: { description: '`{type, clientToken}`', schema: ZGenerateClientTokenResponse } },
  auth: publicAccess,
  errors: {
    bad_request: 'invalid event, or a multipart upload',
    store_unavailable: 'the blob store is not enabled',
    file_too_large: 'above maxFileSizeBytes',
    rate_limit_exceeded:
      'too many permissions, or too many bytes held by permissions not shared yet; Retry-After',
    store_full: 'no storage instance has room',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const s = ctx.deps
    const { payload } = body
    const granted = await s.clientTokens.generate({
      pathname: payload.pathname,
      clientPayload: payload.clientPayload ?? null,
      multipart: payload.multipart ?? false,
      clientIp: clientIp(req),
      clientKey: clientKey(req, s),
    })
    res.set('Cache-Control', 'no-store')
    return reply(200, { type: 'blob.generate-client-token' as const, clientToken: granted.clientToken })
  },
})

/** Whether a POST /api/upload is the Vercel client's event rather than an upload permission request. */
export const isClientTokenRequest = (body: unknown): boolean =>
  (body as { type?: unknown } | undefined)?.type === 'blob.generate-client-token'

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
 * The Vercel Blob client's PUT (issue 16 item 3), under VERCEL_BLOB_API_PATH: every answer, a
 * refusal too, is in the words that client knows, so its handler writes the answer itself.
 */
export const vercelBlobPutOperation = defineRepresentation({
  name: 'vercelBlobPut',
  summary:
    "The Vercel Blob client's PUT (`?pathname=`, `Authorization: Bearer <clientToken from /api/upload>`); the answer's pathname is the one to list in /api/share, with the proof in its url's fragment (`#proof=`)",
  description:
    "Errors carry the Vercel client's codes in the envelope (client_token_expired with `Token expired`, forbidden, file_too_large, bad_request) with the statuses listed.",
  tags: ['public'],
  route: { method: 'put', path: `${VERCEL_BLOB_API_PATH}/` },
  input: {},
  responses: { 200: { description: 'stored', schema: ZVercelPutResponse } },
  auth: clientToken,
  errors: {
    bad_request: 'pathname does not match the token, or the body is not the declared size',
    forbidden: 'client token missing, invalid or expired (`Token expired`)',
    file_too_large: "the body exceeded the token's maximumSizeInBytes",
    service_unavailable: 'a store or the database does not answer',
  },
  async handler(_input, ctx): Promise<{ status: number; body: unknown }> {
    const { req, res } = expressOf(ctx)
    res.set('Connection', 'close')
    try {
      const length = req.headers['content-length']
      const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : null
      const pathname = typeof req.query.pathname === 'string' ? req.query.pathname : undefined
      const stored = await ctx.deps.clientTokens.receive(
        ctx.caller,
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
      res.set('Cache-Control', 'no-store')
      const answer: z.input<typeof ZVercelPutResponse> = {
        // The client hands back only these fields: the uploader's proof for /api/share rides in the
        // url's fragment, which no browser sends anywhere.
        url: `${url}#proof=${stored.proof}`,
        downloadUrl: url,
        pathname: stored.pathname,
        contentType,
        contentDisposition: `attachment; filename="${name}"`,
        etag: `"${stored.size}-${name}"`,
      }
      return { status: 200, body: answer }
    } catch (err) {
      lingerAfterAnswer(req, res)
      const { error, body } = errorAnswer('code', err, req as never)
      const mapped = forVercelClient(error)
      if (error.headers) res.set(error.headers)
      const envelope = body as { error: Record<string, unknown> }
      return {
        status: mapped.status,
        body: { error: { ...envelope.error, code: mapped.code, message: mapped.message } },
      }
    }
  },
  respond(answer, _req, res) {
    ;(res as Response).status(answer.status).json(answer.body)
  },
})

/**
 * POST /api/upload serves two operations: the Vercel client's event (a body with its `type`) and
 * an upload permission request (every other body), each validated by its own schema, as the route
 * did before they were operations.
 */
export function registerUploadRequests(app: Express, s: Services): void {
  // Both are public: the caller is nothing (a requirement added to either must be resolved here).
  for (const op of [generateClientTokenOperation, requestUploadOperation])
    if (op.auth !== publicAccess) throw new Error(`${op.name}: POST /api/upload resolves public access only`)
  const noCaller = () => undefined
  const token = operationHandler(generateClientTokenOperation, noCaller, s)
  const permission = operationHandler(requestUploadOperation, noCaller, s)
  app.post('/api/upload', (req, res, next) =>
    (isClientTokenRequest(req.body) ? token : permission)(req, res, next),
  )
}
