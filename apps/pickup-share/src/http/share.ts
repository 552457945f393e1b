import type { IncomingMessage } from 'node:http'
import { ApiError } from '@quartet/core/errors'
import { publicAccess, reply } from '@quartet/core/operation'
import { z } from 'zod'
import { ZFileName, ZMediaType } from '../domain/filenames.ts'
import { clientKey, define, expressOf } from './services.ts'
import { checkEncryptedSizes, ZShareEncryption } from './share-encryption.ts'
import { ZStoreKind } from './upload.ts'

export const ZPickupCode = z.string().regex(/^\d{6,12}$/, 'must be 6 to 12 digits')
/** The pickup link's token (base64url of 128 random bits), from the link's fragment. */
export const ZLinkToken = z.string().regex(/^[A-Za-z0-9_-]{22,64}$/, 'must be the token of a pickup link')

/** Either the typed code (guessing limits apply) or the link's token (never limited), not both. */
export const eitherCodeOrToken = (v: { code?: string | undefined; token?: string | undefined }) =>
  (v.code === undefined) !== (v.token === undefined)
export const EITHER_MESSAGE = 'give either code (the pickup code) or token (from the pickup link), not both'
export const ZPathname = z.string().min(1).max(1024)

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
export const ZGivenPassword = z.string().min(1, 'must not be empty').max(1024)
/** The access grant a take with the right password returned (downloads of a protected share). */
export const ZAccessGrant = z.string().min(1).max(200)
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
/** A protected share's refusals on take and on every download (README "Password-protected shares"). */
export const PASSWORD_ERRORS = {
  share_password_required:
    'the share is protected and no password (X-Share-Password header, or the password field of take) nor a valid access grant came',
  share_password_wrong: 'the password is not right (spends the password budgets)',
  rate_limit_exceeded:
    'too many failed attempts (Retry-After; details.reason address/throttle for codes, password_address/password_share for passwords)',
} as const

const AUTH_CODE_ERRORS = {
  unlimited_disabled: 'unlimited mode is off',
  auth_code_missing: 'unlimited asked for without an authorization code',
  auth_code_invalid: 'no such authorization code',
  auth_code_used: 'the authorization code was used already',
  auth_code_expired: 'the authorization code expired',
  auth_code_revoked: 'the authorization code was revoked',
  auth_code_scope: 'the authorization code does not grant what was asked',
} as const

export const createShareOperation = define({
  name: 'createShare',
  summary: 'Create a share from uploaded files and get its pickup code',
  tags: ['public'],
  route: { method: 'post', path: '/api/share' },
  input: { body: ZCreateShare },
  responses: {
    200: {
      description: 'the pickup code, and the pickup link with its token (shown once)',
      schema: ZCreateShareResponse,
    },
  },
  auth: publicAccess,
  errors: {
    bad_request: 'invalid request',
    upload_not_issued: 'a file not issued here or without its proof (one answer for both)',
    upload_missing: 'an uploaded file is missing',
    size_mismatch: 'an uploaded file is not the size listed',
    ...AUTH_CODE_ERRORS,
    upload_already_shared: 'a file is already part of a share',
    file_too_large: 'an uploaded file is larger than allowed',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const { code, token } = await ctx.deps.sharing.createShare({
      ...body,
      clientKey: clientKey(req, ctx.deps),
    })
    const link = `${req.protocol}://${req.get('host')}/pickup#${token}`
    res.set('Cache-Control', 'no-store')
    return reply(200, { code, token, link })
  },
})

export const checkAuthCodeOperation = define({
  name: 'checkAuthCode',
  summary:
    'Whether an authorization code grants unlimited downloads and/or no size limit now (the send page asks before uploading); consumes nothing',
  tags: ['public'],
  route: { method: 'post', path: '/api/auth-code/check' },
  input: { body: ZCheckAuthCode },
  responses: {
    200: { description: 'the code is usable for what was asked', schema: ZCheckAuthCodeResponse },
  },
  auth: publicAccess,
  errors: { bad_request: 'invalid request', ...AUTH_CODE_ERRORS },
  async handler({ body }, ctx) {
    const needs: Array<'downloads' | 'size'> = []
    if (body.unlimitedDownloads) needs.push('downloads')
    if (body.limitSize) needs.push('size')
    const { scope, expiresAt } = await ctx.deps.uploads.checkUnlimited(body.authCode, needs)
    ctx.headers.setHeader('Cache-Control', 'no-store')
    return reply(200, { ok: true as const, scope, expiresAt: expiresAt.toISOString() })
  },
})

export const takeOperation = define({
  name: 'take',
  summary:
    'Exchange a pickup code (guessing limits apply) or a pickup link token (never limited) for the file list and remaining downloads',
  tags: ['public'],
  route: { method: 'post', path: '/api/take' },
  input: { body: ZTake },
  responses: { 200: { description: 'the manifest', schema: ZTakeResponse } },
  auth: publicAccess,
  errors: {
    bad_request: 'invalid request, or an X-Share-Password header above 1024 bytes',
    share_not_found: 'unknown code or link',
    share_used_up: 'the share is used up; not a wrong guess',
    share_expired: 'the share expired (details.expiresAt); not a wrong guess',
    ...PASSWORD_ERRORS,
  },
  async handler({ body }, ctx) {
    const { req } = expressOf(ctx)
    const s = ctx.deps
    const unlock = { password: body.password ?? passwordOf(req) }
    const { manifest, remaining, access, encryption } =
      body.token !== undefined
        ? await s.pickup.takeByLink(body.token, clientKey(req, s), unlock)
        : await s.pickup.take(body.code!, clientKey(req, s), unlock)
    ctx.headers.setHeader('Cache-Control', 'no-store')
    return reply(200, {
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
  },
})

export const shareOperations = [createShareOperation, checkAuthCodeOperation, takeOperation] as const

/**
 * The `X-Share-Password` header: the password's UTF-8 bytes as sent (curl and wget send a
 * non-ASCII password that way; Node hands them over as latin1, one character a byte). Absent or
 * empty: none.
 */
export function passwordOf(req: IncomingMessage): string | undefined {
  const raw = req.headers[PASSWORD_HEADER]
  const value = Array.isArray(raw) ? raw[0] : raw
  if (!value) return undefined
  if (value.length > 1024) throw new ApiError('bad_request', `${PASSWORD_HEADER}: must be at most 1024 bytes`)
  return Buffer.from(value, 'latin1').toString('utf8')
}
