import type { Express, Request } from 'express'
import { ApiError } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import { inputOf, validate } from '@quartet/core/validate'
import { z } from 'zod'
import { ZFileName, ZMediaType } from '../domain/filenames.ts'
import { ZGenerateClientToken, ZGenerateClientTokenResponse } from './vercel-blob.ts'
import { STORE_KINDS } from '../domain/storage.ts'
import { clientIp, clientKey, type Services } from './services.ts'
import { acceptBody, lingerAfterAnswer, uploadBody } from './upload-connection.ts'

export const ZStoreKind = z.enum(STORE_KINDS)

export const ZUploadRequest = z
  .object({
    store: ZStoreKind.default('blob'),
    name: ZFileName,
    size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
    type: ZMediaType.default('application/octet-stream'),
    /** Unlimited file size; needs an authorization code with scope size or both. */
    limitSize: z.boolean().optional(),
    authCode: z.string().max(200).optional(),
  })
  .strict()
export type TUploadRequest = z.infer<typeof ZUploadRequest>

export const ZUploadResponse = z.object({
  store: ZStoreKind,
  pathname: z.string(),
  upload: z.object({
    url: z.string(),
    method: z.enum(['PUT', 'POST']),
    fields: z.record(z.string(), z.string()).optional(),
    headers: z.record(z.string(), z.string()).optional(),
  }),
  options: z.object({ allowOverwrite: z.literal(false), maximumSizeInBytes: z.number().int().nullable() }),
  expiresAt: z.string(),
  /** blob and bucket: the same permission as a resumable tus 1.0 upload (tus-js-client `endpoint`, `headers`). */
  tus: z.object({ endpoint: z.string(), headers: z.record(z.string(), z.string()) }).optional(),
  /** The uploader's proof: list it with the file in /api/share (only the uploader can share it). */
  proof: z.string(),
})

export const ZBlobUploadResponse = z.object({ pathname: z.string(), size: z.number().int() })

const uploadSchemas = { body: ZUploadRequest }

export const uploadOperations: OperationDoc[] = [
  {
    method: 'post',
    path: '/api/upload',
    operationId: 'requestUpload',
    summary:
      'Get a client-direct upload permission for one file (with `tus` for a resumable upload), or a Vercel Blob client token (`blob.generate-client-token`)',
    tags: ['public'],
    request: { body: z.union([ZUploadRequest, ZGenerateClientToken]) },
    responses: {
      200: {
        description: 'where and how to upload; for a client token request, `{type, clientToken}`',
        schema: z.union([ZUploadResponse, ZGenerateClientTokenResponse]),
      },
      400: { description: 'invalid name, size or type, or the store is not enabled' },
      403: { description: 'unlimited size requested without a usable authorization code' },
      413: { description: 'declared size above maxFileSizeBytes' },
      429: {
        description:
          'too many permissions (per address or everyone), or too many bytes held by permissions not shared yet (details.reason); Retry-After',
      },
      507: { description: 'no storage instance of the kind has room (store_full)' },
    },
  },
  {
    method: 'put',
    path: '/api/blob/upload',
    operationId: 'blobUpload',
    summary: 'Upload the file body to the blob store (X-Upload-Token from /api/upload)',
    tags: ['public'],
    responses: {
      201: { description: 'stored', schema: ZBlobUploadResponse },
      401: { description: 'token missing, invalid or expired' },
      409: { description: 'an object already exists at the pathname' },
      413: { description: 'the body exceeded maximumSizeInBytes' },
      415: { description: 'a JSON content type was sent; send application/octet-stream' },
    },
  },
  {
    method: 'put',
    path: '/api/repo/upload',
    operationId: 'repoUpload',
    summary: 'Upload the file body to the git repository store; it is committed and pushed before 201',
    tags: ['public'],
    responses: {
      201: { description: 'committed', schema: ZBlobUploadResponse },
      401: { description: 'token missing, invalid or expired' },
      409: { description: 'an object already exists at the pathname' },
      413: { description: 'the body exceeded maximumSizeInBytes (at most REPO_MAX_FILE_BYTES)' },
      415: { description: 'a JSON content type was sent; send application/octet-stream' },
      502: { description: 'the git remote refused or failed' },
    },
  },
]

export function registerUpload(app: Express, s: Services): void {
  app.post('/api/upload', validate(uploadSchemas), async (req, res) => {
    const { body } = inputOf(uploadSchemas, req)
    const grant = await s.uploads.requestUpload({
      ...body,
      clientIp: clientIp(req),
      clientKey: clientKey(req, s),
    })
    const { resumable, ...rest } = grant
    res.set('Cache-Control', 'no-store').json({
      ...rest,
      expiresAt: grant.expiresAt.toISOString(),
      ...(resumable
        ? {
            tus: {
              endpoint: s.tus.endpointOf(resumable.instance),
              headers: { 'x-upload-token': resumable.token },
            },
          }
        : {}),
    })
  })

  // The body streams straight to disk (blob) or into a git commit (repo): no body parser may buffer
  // it, and a refusal must reach the client (see upload-connection.ts).
  for (const kind of ['blob', 'repo'] as const)
    app.put(`/api/${kind}/upload`, async (req: Request, res) => {
      res.set('Connection', 'close')
      try {
        // The JSON parser has read a JSON body already (body-parser 2 leaves req.body unset otherwise).
        if (req.body !== undefined || req.is(['application/json', '+json']))
          throw new ApiError('unsupported_media_type', 'send the file as application/octet-stream, not JSON')
        const length = req.headers['content-length']
        const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : null
        const result = await s.uploads.receiveBlobUpload(
          req.get('x-upload-token'),
          () => {
            acceptBody(req, res)
            return uploadBody(req)
          },
          declared,
          { kind },
        )
        res.removeHeader('Connection')
        res.status(201).json(result)
      } catch (err) {
        lingerAfterAnswer(req, res)
        throw err
      }
    })
}

/** A PUT whose body this server streams into a store itself; it answers `Expect: 100-continue`. */
export const isStreamedUpload = (req: { method?: string | undefined; url?: string | undefined }): boolean =>
  req.method === 'PUT' && /^\/api\/((blob|repo)\/upload|blob\/vercel\/?)(\?|$)/.test(req.url ?? '')
