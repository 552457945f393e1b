import type { Express, Request, RequestHandler, Response } from 'express'
import { ApiError } from '@quartet/core/errors'
import type { OperationDoc } from '@quartet/core/openapi'
import { inputOf, validate } from '@quartet/core/validate'
import { cookieValue, csrfGuard } from '@quartet/core/web'
import { z } from 'zod'
import { ABSOLUTE_TIMEOUT_MS, type AdminSession } from '../domain/admin-sessions.ts'
import { ZSettings, ZSettingsPatch } from '../domain/settings.ts'
import { clientIp, clientKey, type Services } from './services.ts'

/** The admin session cookie (the product abbreviation: Quartet Pickup Share). */
export const SESSION_COOKIE = 'qps_session'

const sessionOf = (res: Response): AdminSession => res.locals.adminSession as AdminSession

function requireSession(s: Services): RequestHandler {
  return async (req, res, next) => {
    const session = await s.sessions.resume(cookieValue(req, SESSION_COOKIE))
    if (!session) throw new ApiError('session_required', 'log in first (POST /api/admin/login)')
    res.locals.adminSession = session
    res.set('Cache-Control', 'no-store')
    next()
  }
}

function setSessionCookie(req: Request, res: Response, value: string, maxAgeMs: number) {
  res.cookie(SESSION_COOKIE, value, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: req.secure,
    maxAge: maxAgeMs,
  })
}

// --- contracts ---------------------------------------------------------------------------------

export const ZLogin = z.object({ password: z.string().min(1).max(1024) }).strict()
export const ZShareList = z
  .object({
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(200).default(50),
    sort: z.enum(['createdAt', 'expiresAt', 'code']).default('createdAt'),
    order: z.enum(['asc', 'desc']).default('desc'),
    q: z.string().max(255).optional(),
    status: z.enum(['active', 'exhausted', 'expired']).optional(),
  })
  .strict()
export const ZDeleteShare = z
  .object({ code: z.string().regex(/^\d{6,12}$/, 'must be 6 to 12 digits') })
  .strict()
export const ZShareAction = z.object({ action: z.literal('cleanup') }).strict()
export const ZCreateAuthCode = z
  .object({
    note: z.string().max(500).optional(),
    expiresInHours: z
      .number()
      .int()
      .min(1)
      .max(24 * 365),
    scope: z.enum(['downloads', 'size', 'both']),
  })
  .strict()
export const ZRevokeAuthCode = z.object({ id: z.uuid() }).strict()
export const ZAuditQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    action: z.string().max(100).optional(),
  })
  .strict()

const loginSchemas = { body: ZLogin }
const listSchemas = { query: ZShareList }
const deleteSchemas = { body: ZDeleteShare }
const actionSchemas = { body: ZShareAction }
const settingsSchemas = { body: ZSettingsPatch }
const createCodeSchemas = { body: ZCreateAuthCode }
const revokeSchemas = { body: ZRevokeAuthCode }
const auditSchemas = { query: ZAuditQuery }

/** An admin operation's document: the session it needs and the two answers every admin route can give. */
export const adminOperation = (op: Omit<OperationDoc, 'tags' | 'security'>): OperationDoc => ({
  ...op,
  tags: ['admin'],
  security: ['adminSession'],
  responses: {
    ...op.responses,
    401: { description: 'no valid session' },
    403: { description: 'CSRF check failed' },
  },
})

export const adminOperations: OperationDoc[] = [
  {
    method: 'post',
    path: '/api/admin/login',
    operationId: 'adminLogin',
    summary: 'Log in; sets the qps_session cookie',
    tags: ['admin'],
    request: loginSchemas,
    responses: {
      200: { description: 'logged in', schema: z.object({ ok: z.literal(true), expiresAt: z.string() }) },
      401: { description: 'wrong password' },
      403: { description: 'CSRF check failed' },
      429: {
        description:
          'too many failed logins from this address, or for the account or everyone (backoff); Retry-After',
      },
    },
  },
  adminOperation({
    method: 'post',
    path: '/api/admin/logout',
    operationId: 'adminLogout',
    summary: 'End the session',
    responses: { 200: { description: 'logged out' } },
  }),
  adminOperation({
    method: 'get',
    path: '/api/admin/shares',
    operationId: 'listShares',
    summary: 'List shares (paginated, filterable, sortable)',
    request: listSchemas,
    responses: { 200: { description: 'a page of shares' } },
  }),
  adminOperation({
    method: 'delete',
    path: '/api/admin/shares',
    operationId: 'deleteShare',
    summary: 'Delete a share and its files',
    request: deleteSchemas,
    responses: { 200: { description: 'deleted' }, 404: { description: 'no such share' } },
  }),
  adminOperation({
    method: 'post',
    path: '/api/admin/shares',
    operationId: 'cleanupOrphans',
    summary: 'Remove orphan files',
    request: actionSchemas,
    responses: {
      200: {
        description: 'what was removed',
        schema: z.object({
          removedFiles: z.number(),
          freedBytes: z.number(),
          partialFiles: z.number(),
          partialBytes: z.number(),
        }),
      },
    },
  }),
  adminOperation({
    method: 'get',
    path: '/api/admin/settings',
    operationId: 'getSettings',
    summary: 'Site settings',
    responses: { 200: { description: 'settings', schema: ZSettings } },
  }),
  adminOperation({
    method: 'put',
    path: '/api/admin/settings',
    operationId: 'putSettings',
    summary: 'Change site settings (any subset)',
    request: settingsSchemas,
    responses: {
      200: { description: 'saved settings', schema: ZSettings },
      400: { description: 'invalid; nothing changed' },
    },
  }),
  adminOperation({
    method: 'get',
    path: '/api/admin/authcodes',
    operationId: 'listAuthCodes',
    summary: 'Authorization code issuance log',
    responses: { 200: { description: 'records' } },
  }),
  adminOperation({
    method: 'post',
    path: '/api/admin/authcodes',
    operationId: 'createAuthCode',
    summary: 'Issue an authorization code (shown once)',
    request: createCodeSchemas,
    responses: { 201: { description: 'the code' } },
  }),
  adminOperation({
    method: 'delete',
    path: '/api/admin/authcodes',
    operationId: 'revokeAuthCode',
    summary: 'Revoke an unused authorization code',
    request: revokeSchemas,
    responses: {
      200: { description: 'revoked' },
      404: { description: 'unknown id' },
      409: { description: 'already used or revoked' },
    },
  }),
  adminOperation({
    method: 'get',
    path: '/api/admin/audit',
    operationId: 'auditLog',
    summary: 'The admin audit log, newest first',
    request: auditSchemas,
    responses: { 200: { description: 'entries' } },
  }),
]

// --- handlers ----------------------------------------------------------------------------------

export function registerAdmin(app: Express, s: Services): void {
  app.use('/api/admin', csrfGuard(s.adminAllowedOrigins))
  const audit = (
    req: Request,
    res: Response,
    action: string,
    target: string | null,
    details: Record<string, unknown> = {},
  ) =>
    s.audit.append({
      actor: res.locals.adminSession ? `admin:${sessionOf(res).label}` : 'anonymous',
      action,
      target,
      ip: clientIp(req),
      details,
    })

  app.post('/api/admin/login', validate(loginSchemas), async (req, res) => {
    const { body } = inputOf(loginSchemas, req)
    if (!s.sessions.enabled)
      throw new ApiError('admin_disabled', 'no admin password is configured (ADMIN_PASSWORD_HASH)')
    await s.sessions.assertAvailable()
    const ticket = await s.loginGuard.admit(clientKey(req, s), await s.settings.get())
    let right: boolean
    try {
      right = await s.sessions.checkPassword(body.password)
    } catch (err) {
      await s.loginGuard.abandon(ticket)
      throw err
    }
    if (!right) {
      s.loginGuard.failed(ticket)
      await audit(req, res, 'admin.login_failed', null)
      throw new ApiError('invalid_password', 'wrong password')
    }
    await s.loginGuard.succeeded(ticket)
    const { id, session } = await s.sessions.start(cookieValue(req, SESSION_COOKIE))
    res.locals.adminSession = session
    setSessionCookie(req, res, id, ABSOLUTE_TIMEOUT_MS)
    await audit(req, res, 'admin.login', null)
    res.set('Cache-Control', 'no-store').json({
      ok: true,
      expiresAt: new Date(session.createdAt.getTime() + ABSOLUTE_TIMEOUT_MS).toISOString(),
    })
  })

  app.use('/api/admin', requireSession(s))

  app.post('/api/admin/logout', async (req, res) => {
    await s.sessions.end(cookieValue(req, SESSION_COOKIE))
    await audit(req, res, 'admin.logout', null)
    res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: req.secure })
    res.json({ ok: true })
  })

  app.get('/api/admin/shares', validate(listSchemas), async (req, res) => {
    const { query } = inputOf(listSchemas, req)
    const { items, total } = await s.shareAdmin.listShares(query)
    res.json({
      items: items.map((sh) => ({
        code: sh.code,
        createdAt: sh.createdAt.toISOString(),
        expiresAt: sh.expiresAt.toISOString(),
        exhaustedAt: sh.exhaustedAt?.toISOString() ?? null,
        maxDownloads: sh.maxDownloads,
        remaining: sh.remaining,
        limitSize: sh.limitSize,
        // Whether a password protects it: never the password or its hash.
        protected: sh.passwordHash !== null,
        totalBytes: sh.totalBytes,
        files: sh.files.map((f) => ({
          name: f.name,
          size: f.size,
          type: f.type,
          path: f.pathname,
          store: f.store,
        })),
      })),
      page: query.page,
      pageSize: query.pageSize,
      total,
    })
  })

  app.delete('/api/admin/shares', validate(deleteSchemas), async (req, res) => {
    const { body } = inputOf(deleteSchemas, req)
    const share = await s.shareAdmin.removeShareByCode(body.code)
    await audit(req, res, 'share.delete', body.code, { files: share.files.length })
    res.json({ deleted: true, code: body.code })
  })

  app.post('/api/admin/shares', validate(actionSchemas), async (req, res) => {
    const result = await s.cleanup.removeOrphans()
    await audit(req, res, 'shares.cleanup', null, { ...result })
    res.json(result)
  })

  app.get('/api/admin/settings', async (_req, res) => {
    res.json(await s.settings.get())
  })

  app.put('/api/admin/settings', validate(settingsSchemas), async (req, res) => {
    const { body } = inputOf(settingsSchemas, req)
    const { before, after } = await s.settings.update(body)
    const changed = Object.keys(body)
      .filter((k) => before[k as keyof typeof before] !== after[k as keyof typeof after])
      .sort()
    await audit(req, res, 'settings.update', null, { changed, values: body })
    res.json(after)
  })

  app.get('/api/admin/authcodes', async (_req, res) => {
    const records = await s.authCodes.list()
    res.json({ items: records.map(({ record, status }) => presentCode(record, status)) })
  })

  app.post('/api/admin/authcodes', validate(createCodeSchemas), async (req, res) => {
    const { body } = inputOf(createCodeSchemas, req)
    const { code, record } = await s.authCodes.issue(body)
    await audit(req, res, 'authcode.create', record.id, {
      scope: record.scope,
      expiresAt: record.expiresAt.toISOString(),
    })
    res.status(201).json({ ...presentCode(record, 'unused'), code })
  })

  app.delete('/api/admin/authcodes', validate(revokeSchemas), async (req, res) => {
    const { body } = inputOf(revokeSchemas, req)
    const record = await s.authCodes.revoke(body.id)
    await audit(req, res, 'authcode.revoke', record.id)
    res.json(presentCode(record, 'revoked'))
  })

  app.get('/api/admin/audit', validate(auditSchemas), async (req, res) => {
    const { query } = inputOf(auditSchemas, req)
    const entries = await s.audit.list(query)
    res.json({ items: entries.map((e) => ({ ...e, at: e.at.toISOString() })) })
  })
}

function presentCode(
  r: {
    id: string
    hint: string
    note: string | null
    scope: string
    createdAt: Date
    expiresAt: Date
    usedAt: Date | null
    usedByShareCode: string | null
    revokedAt: Date | null
  },
  status: string,
) {
  return {
    id: r.id,
    hint: `…${r.hint}`,
    note: r.note,
    scope: r.scope,
    status,
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    usedAt: r.usedAt?.toISOString() ?? null,
    usedByShare: r.usedByShareCode,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }
}
