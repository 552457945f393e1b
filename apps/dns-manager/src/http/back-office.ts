import path from 'node:path'
import { ApiError } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import { inputOf, validate } from '@quartet/core/validate'
import { cookieValue, csrfGuard, findWebRoot, serveWebBuild } from '@quartet/core/web'
import type { Express, Request, RequestHandler, Response } from 'express'
import { z } from 'zod'
import type { PeopleUseCases } from '../domain/people.ts'
import { PASSWORD_MIN, SESSION_ABSOLUTE_MS } from '../domain/people-common.ts'
import type { Principal } from '../domain/use-cases.ts'
import { operationsByName } from './operations.ts'
import type { Pipeline } from './pipeline.ts'

/** The back office's session cookie (Quartet DNS Manager). */
export const SESSION_COOKIE = 'qdm_session'

/** The pages: one HTML document; the script renders what the path names. */
export const PAGE_PATHS = ['/', '/account', '/account/*page'] as const

export function webRoot(): string | undefined {
  return findWebRoot([path.resolve(__dirname, 'web'), path.resolve(__dirname, '..', '..', 'dist', 'web')])
}

// --- contracts ---------------------------------------------------------------------------------

const zEmail = z.email('must be an e-mail address').max(254)
const zPassword = z.string().min(1, 'must not be empty').max(1024)
const zToken = z.string().min(16, 'is not a link token').max(200)

export const ZSignup = z.strictObject({ email: zEmail, invite: zToken.optional() })
export const ZLinkToken = z.strictObject({ token: zToken })
export const ZCompleteWithPassword = z.strictObject({ token: zToken, password: zPassword })
export const ZSignin = z.strictObject({ email: zEmail, password: zPassword })
export const ZResetRequest = z.strictObject({ email: zEmail })
export const ZChangePassword = z.strictObject({ current_password: zPassword, new_password: zPassword })
export const ZAccountSettings = z.strictObject({
  api_access_enabled: z.boolean().optional(),
  ip_allow_list: z.array(z.string().max(64)).max(100).optional(),
})
export const ZAuditQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z
    .string()
    .regex(/^\d{1,19}$/, 'must be an entry id')
    .optional(),
})
export const ZOperationName = z.strictObject({ name: z.string().max(64) })

const schemas = {
  signup: { body: ZSignup },
  link: { query: ZLinkToken },
  complete: { body: ZCompleteWithPassword },
  signin: { body: ZSignin },
  reset: { body: ZResetRequest },
  password: { body: ZChangePassword },
  settings: { body: ZAccountSettings },
  audit: { query: ZAuditQuery },
  op: { params: ZOperationName },
}

const page = (op: Omit<OperationDoc, 'tags'>, signedIn = true): OperationDoc => ({
  ...op,
  tags: ['back office'],
  ...(signedIn ? { security: ['accountSession'] } : {}),
  responses: {
    ...op.responses,
    ...(signedIn
      ? { 401: { description: 'session_required: sign in first' } }
      : ({} as OperationDoc['responses'])),
    403: {
      description: `csrf_rejected: a write without X-Requested-With from this site${op.responses[403] ? `; ${op.responses[403].description}` : ''}`,
    },
  },
})

export const backOfficeOperations: OperationDoc[] = [
  page(
    {
      method: 'get',
      path: '/account/api/site',
      operationId: 'backOfficeSite',
      summary: 'What the pages need before sign-in: the registration mode and the password rule',
      responses: { 200: { description: 'site facts' } },
    },
    false,
  ),
  page(
    {
      method: 'post',
      path: '/account/api/signup',
      operationId: 'signupStart',
      summary: 'Mail a sign-up link (the same answer whether or not the address has an account)',
      request: { body: ZSignup },
      responses: {
        200: { description: 'mailed' },
        403: { description: 'registration_closed, invite_required' },
        429: { description: 'too many attempts from this address or for this address' },
        503: { description: 'mail_unavailable' },
      },
    },
    false,
  ),
  page(
    {
      method: 'get',
      path: '/account/api/signup/link',
      operationId: 'signupLink',
      summary: 'The address a sign-up link is for (400 link_invalid when used or expired)',
      request: { query: ZLinkToken },
      responses: { 200: { description: 'the address' }, 400: { description: 'link_invalid' } },
    },
    false,
  ),
  page(
    {
      method: 'post',
      path: '/account/api/signup/complete',
      operationId: 'signupComplete',
      summary: 'Choose a password and create the account; sets the qdm_session cookie',
      request: { body: ZCompleteWithPassword },
      responses: {
        201: { description: 'signed up and in' },
        400: { description: 'link_invalid, bad_request' },
      },
    },
    false,
  ),
  page(
    {
      method: 'post',
      path: '/account/api/signin',
      operationId: 'signin',
      summary: 'Sign in; sets the qdm_session cookie',
      request: { body: ZSignin },
      responses: {
        200: { description: 'signed in' },
        401: { description: 'auth_invalid_password' },
        429: { description: 'too many attempts from this address or for this account' },
      },
    },
    false,
  ),
  page(
    {
      method: 'post',
      path: '/account/api/reset',
      operationId: 'resetRequest',
      summary: 'Mail a password-reset link (the same answer whether or not the address has an account)',
      request: { body: ZResetRequest },
      responses: {
        200: { description: 'mailed if the address has an account' },
        429: { description: 'limited' },
      },
    },
    false,
  ),
  page(
    {
      method: 'post',
      path: '/account/api/reset/complete',
      operationId: 'resetComplete',
      summary: 'Set a new password with a mailed link; every session of the account ends',
      request: { body: ZCompleteWithPassword },
      responses: { 200: { description: 'password set' }, 400: { description: 'link_invalid, bad_request' } },
    },
    false,
  ),
  page({
    method: 'post',
    path: '/account/api/signout',
    operationId: 'signout',
    summary: 'End this session',
    responses: { 200: { description: 'signed out' } },
  }),
  page({
    method: 'get',
    path: '/account/api/account',
    operationId: 'account',
    summary: 'The account: address, balance, quota, API switch, IP allow list, the caller’s address',
    responses: { 200: { description: 'the account' } },
  }),
  page({
    method: 'post',
    path: '/account/api/account/settings',
    operationId: 'accountSettings',
    summary: 'The API access switch and the IP allow list',
    request: { body: ZAccountSettings },
    responses: {
      200: { description: 'the account' },
      400: { description: 'bad_request (field ip_allow_list)' },
    },
  }),
  page({
    method: 'post',
    path: '/account/api/account/password',
    operationId: 'changePassword',
    summary: 'Change the password; every session ends and this browser gets a new one',
    request: { body: ZChangePassword },
    responses: { 200: { description: 'changed' }, 401: { description: 'auth_invalid_password' } },
  }),
  page({
    method: 'get',
    path: '/account/api/audit',
    operationId: 'auditLog',
    summary: 'What the API and the pages did on the account, from where; newest first',
    request: { query: ZAuditQuery },
    responses: { 200: { description: 'entries' } },
  }),
  page({
    method: 'post',
    path: '/account/api/op/{name}',
    operationId: 'pageOperation',
    summary:
      'Any operation of the API (its JSON-RPC method name, e.g. subdomains.create) with the session as the principal: the same input, rules, answer and audit as REST',
    request: { params: ZOperationName },
    responses: {
      200: { description: '`{success:true, …}` as REST answers' },
      404: { description: 'not_found: no such operation' },
    },
  }),
]

// --- handlers ----------------------------------------------------------------------------------

type SessionPrincipal = NonNullable<Awaited<ReturnType<PeopleUseCases['sessionPrincipal']>>>
const principalOf = (res: Response): SessionPrincipal => res.locals.principal as SessionPrincipal

function setSessionCookie(req: Request, res: Response, value: string) {
  res.cookie(SESSION_COOKIE, value, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    // Behind Caddy on https (trust proxy): Secure. Plain http on localhost: a cookie that works.
    secure: req.secure,
    maxAge: SESSION_ABSOLUTE_MS,
  })
}

function clearSessionCookie(req: Request, res: Response) {
  res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: req.secure })
}

/**
 * The back office: its JSON API under /account/api (CSRF-guarded writes, session cookie) and its
 * pages. A signed-in request runs the API's operations through the same pipeline as REST, with
 * the session as the principal (rate limit, validation, handler, audit).
 */
export function registerBackOffice(
  app: Express,
  deps: { people: PeopleUseCases; pipeline: Pipeline; allowedOrigins: string[] },
): void {
  const { people, pipeline } = deps
  app.use('/account/api', (_req, res, next) => {
    res.set('Cache-Control', 'no-store')
    next()
  })
  app.use('/account/api', csrfGuard(deps.allowedOrigins, 'account'))

  app.get('/account/api/site', (_req, res) => {
    res.json({
      success: true,
      registration: people.settings.registration,
      password_min: PASSWORD_MIN,
    })
  })

  app.post('/account/api/signup', validate(schemas.signup), async (req, res) => {
    const { body } = inputOf(schemas.signup, req)
    res.json({ success: true, ...(await people.startSignup(body, req.ip)) })
  })
  app.get('/account/api/signup/link', validate(schemas.link), async (req, res) => {
    const { query } = inputOf(schemas.link, req)
    res.json({ success: true, ...(await people.signupLink(query)) })
  })
  app.post('/account/api/signup/complete', validate(schemas.complete), async (req, res) => {
    const { body } = inputOf(schemas.complete, req)
    const s = await people.completeSignup(body, req.ip)
    setSessionCookie(req, res, s.sessionId)
    res.status(201).json({ success: true, expires_at: s.expiresAt.toISOString() })
  })
  app.post('/account/api/signin', validate(schemas.signin), async (req, res) => {
    const { body } = inputOf(schemas.signin, req)
    // A sign-in ends the session this browser had (the id rotates).
    const previous = cookieValue(req, SESSION_COOKIE)
    if (previous) await people.signOut(previous, null)
    const s = await people.signIn(body, req.ip)
    setSessionCookie(req, res, s.sessionId)
    res.json({ success: true, expires_at: s.expiresAt.toISOString() })
  })
  app.post('/account/api/reset', validate(schemas.reset), async (req, res) => {
    const { body } = inputOf(schemas.reset, req)
    res.json({ success: true, ...(await people.requestReset(body, req.ip)) })
  })
  app.post('/account/api/reset/complete', validate(schemas.complete), async (req, res) => {
    const { body } = inputOf(schemas.complete, req)
    const done = await people.completeReset(body, req.ip)
    clearSessionCookie(req, res)
    res.json({ success: true, ...done })
  })

  const requireSession: RequestHandler = async (req, res, next) => {
    const principal = await people.sessionPrincipal(cookieValue(req, SESSION_COOKIE), req.ip)
    if (!principal) throw new ApiError('session_required', 'sign in first (POST /account/api/signin)')
    res.locals.principal = principal
    next()
  }
  app.use('/account/api', requireSession)

  app.post('/account/api/signout', async (req, res) => {
    await people.signOut(cookieValue(req, SESSION_COOKIE), principalOf(res))
    clearSessionCookie(req, res)
    res.json({ success: true })
  })
  app.get('/account/api/account', async (_req, res) => {
    res.json({ success: true, ...(await people.account(principalOf(res))) })
  })
  app.post('/account/api/account/settings', validate(schemas.settings), async (req, res) => {
    const { body } = inputOf(schemas.settings, req)
    res.json({ success: true, ...(await people.updateAccountSettings(principalOf(res), body)) })
  })
  app.post('/account/api/account/password', validate(schemas.password), async (req, res) => {
    const { body } = inputOf(schemas.password, req)
    const s = await people.changePassword(principalOf(res), body)
    setSessionCookie(req, res, s.sessionId)
    res.json({ success: true, expires_at: s.expiresAt.toISOString() })
  })
  app.get('/account/api/audit', validate(schemas.audit), async (req, res) => {
    const { query } = inputOf(schemas.audit, req)
    res.json({ success: true, ...(await people.auditLog(principalOf(res), query)) })
  })

  // The API's operations, by their JSON-RPC name, with the session as the principal.
  app.post('/account/api/op/:name', validate(schemas.op), async (req, res) => {
    const { params } = inputOf(schemas.op, req)
    const op = operationsByName.get(params.name)
    if (!op) throw new ApiError('not_found', `no operation ${params.name}`)
    const principal: Principal = principalOf(res)
    setRateLimitHeaders(res, await pipeline.spend(principal))
    const body = req.body as unknown
    if (body !== undefined && (typeof body !== 'object' || body === null || Array.isArray(body)))
      throw new ApiError('bad_request', 'the JSON body must be an object')
    const output = await pipeline.run(op, principal, body ?? {})
    if (op.raw) {
      const raw = op.raw(output)
      res.type(raw.contentType).send(raw.body)
      return
    }
    res.status(op.status).json({ success: true, ...(output as object) })
  })
  app.use('/account/api', () => {
    throw new ApiError('not_found', 'no such back-office route')
  })

  serveWebBuild(app, {
    webRoot,
    pages: PAGE_PATHS,
    buildHint: 'pnpm --filter @quartet/dns-manager build',
  })
}
