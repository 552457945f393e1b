import { ApiError } from '@quartet/core/errors'
import { publicAccess, reply } from '@quartet/core/operation'
import { z } from 'zod'
import { ZFileName, ZMediaType } from '../domain/filenames.ts'
import { uploadToken } from './auth.ts'
import { STORE_KINDS } from '../domain/storage.ts'
import { clientIp, clientKey, define, expressOf } from './services.ts'
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

export const requestUploadOperation = define({
  name: 'requestUpload',
  summary:
    'Get a client-direct upload permission for one file (with `tus` for a resumable upload), or a Vercel Blob client token (`blob.generate-client-token`)',
  description:
    'A body with `type: "blob.generate-client-token"` is the Vercel Blob client\'s event, answered by generateClientToken.',
  tags: ['public'],
  route: { method: 'post', path: '/api/upload' },
  input: { body: ZUploadRequest },
  responses: { 200: { description: 'where and how to upload', schema: ZUploadResponse } },
  auth: publicAccess,
  errors: {
    bad_request: 'invalid name, size or type',
    store_unavailable: 'the store is not enabled',
    unlimited_disabled: 'unlimited size requested while unlimited mode is off',
    auth_code_missing: 'unlimited size requested without an authorization code',
    auth_code_invalid: 'unlimited size requested with an unknown authorization code',
    auth_code_used: 'the authorization code was used already',
    auth_code_expired: 'the authorization code expired',
    auth_code_revoked: 'the authorization code was revoked',
    auth_code_scope: 'the authorization code does not grant an unlimited size',
    file_too_large: 'declared size above maxFileSizeBytes',
    rate_limit_exceeded:
      'too many permissions (per address or everyone), or too many bytes held by permissions not shared yet (details.reason); Retry-After',
    store_full: 'no storage instance of the kind has room',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const s = ctx.deps
    const grant = await s.uploads.requestUpload({
      ...body,
      clientIp: clientIp(req),
      clientKey: clientKey(req, s),
    })
    const { resumable, ...rest } = grant
    res.set('Cache-Control', 'no-store')
    return reply(200, {
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
  },
})

const bodyUploadErrors = {
  upload_token_invalid: 'token missing or invalid',
  upload_token_expired: 'token expired',
  upload_exists: 'an object already exists at the pathname',
  unsupported_media_type: 'a JSON content type was sent; send application/octet-stream',
} as const

/**
 * PUT /api/blob/upload and /api/repo/upload: the body streams straight to disk (blob) or into a
 * git commit (repo). No body parser may buffer it, and a refusal must reach the client (see
 * upload-connection.ts).
 */
function bodyUploadOperation(kind: 'blob' | 'repo') {
  return define({
    name: kind === 'blob' ? 'blobUpload' : 'repoUpload',
    summary:
      kind === 'blob'
        ? 'Upload the file body to the blob store (X-Upload-Token from /api/upload)'
        : 'Upload the file body to the git repository store; it is committed and pushed before 201',
    tags: ['public'],
    route: { method: 'put', path: `/api/${kind}/upload` },
    input: {},
    responses: {
      201: { description: kind === 'blob' ? 'stored' : 'committed', schema: ZBlobUploadResponse },
    },
    auth: uploadToken,
    errors:
      kind === 'blob'
        ? { ...bodyUploadErrors, file_too_large: 'the body exceeded maximumSizeInBytes' }
        : {
            ...bodyUploadErrors,
            file_too_large: 'the body exceeded maximumSizeInBytes (at most REPO_MAX_FILE_BYTES)',
            storage_failed: 'the git remote refused or failed',
          },
    async handler(_input, ctx) {
      const { req, res } = expressOf(ctx)
      res.set('Connection', 'close')
      try {
        // The JSON parser has read a JSON body already (body-parser 2 leaves req.body unset otherwise).
        if (req.body !== undefined || req.is(['application/json', '+json']))
          throw new ApiError('unsupported_media_type', 'send the file as application/octet-stream, not JSON')
        const length = req.headers['content-length']
        const declared = length !== undefined && /^\d+$/.test(length) ? Number(length) : null
        const result = await ctx.deps.uploads.receiveBlobUpload(
          ctx.caller,
          () => {
            acceptBody(req, res)
            return uploadBody(req)
          },
          declared,
          { kind },
        )
        res.removeHeader('Connection')
        return reply(201, result)
      } catch (err) {
        lingerAfterAnswer(req, res)
        throw err
      }
    },
  })
}

export const blobUploadOperation = bodyUploadOperation('blob')
export const repoUploadOperation = bodyUploadOperation('repo')

/** A PUT whose body this server streams into a store itself; it answers `Expect: 100-continue`. */
export const isStreamedUpload = (req: { method?: string | undefined; url?: string | undefined }): boolean =>
  req.method === 'PUT' && /^\/api\/((blob|repo)\/upload|blob\/vercel\/?)(\?|$)/.test(req.url ?? '')
