import type { Express, Request } from 'express'
import { ApiError } from '@quartet/core/errors'
import { type AnyOperation, publicAccess, reply } from '@quartet/core/operation'
import { cookieValue, csrfGuard } from '@quartet/core/web'
import type { z } from 'zod'
import { ABSOLUTE_TIMEOUT_MS } from '../domain/admin-sessions.ts'
import { ZSettings, ZSettingsPatch } from '../domain/settings.ts'
import {
  ZAdminShareList,
  ZAuditList,
  ZAuditQuery,
  ZAuthCodeList,
  ZAuthCodeRecord,
  ZCleanupResult,
  ZCreateAuthCode,
  ZDeleteShare,
  ZIssuedAuthCode,
  ZLogin,
  ZLoginResponse,
  ZOk,
  ZRevokeAuthCode,
  ZShareAction,
  ZShareDeleted,
  ZShareList,
} from './admin-contract.ts'
import { adminSession, SESSION_COOKIE } from './auth.ts'
import { clientIp, clientKey, define, expressOf, type Services } from './services.ts'

/**
 * The admin API: logging in and out, the shares, the site settings, authorization codes and
 * the audit log. Every path under /api/admin passes core's CSRF guard first (registerAdminGuards).
 */
export function registerAdminGuards(app: Express, s: Pick<Services, 'adminAllowedOrigins'>): void {
  app.use('/api/admin', csrfGuard(s.adminAllowedOrigins))
}

/** One audit entry of an admin's request: the actor is the session's label (anonymous before login). */
export function auditOf(s: Pick<Services, 'audit'>, req: Request, actor: { label: string } | undefined) {
  return (action: string, target: string | null, details: Record<string, unknown> = {}) =>
    s.audit.append({
      actor: actor ? `admin:${actor.label}` : 'anonymous',
      action,
      target,
      ip: clientIp(req),
      details,
    })
}

// --- operations --------------------------------------------------------------------------------

const admin = { tags: ['admin'], auth: adminSession }

export const adminLoginOperation = define({
  name: 'adminLogin',
  summary: 'Log in; sets the qps_session cookie',
  tags: ['admin'],
  route: { method: 'post', path: '/api/admin/login' },
  input: { body: ZLogin },
  responses: { 200: { description: 'logged in', schema: ZLoginResponse } },
  auth: publicAccess,
  errors: {
    csrf_rejected: 'CSRF check failed',
    invalid_password: 'wrong password',
    rate_limit_exceeded:
      'too many failed logins from this address, or for the account or everyone (backoff); Retry-After',
    admin_disabled: 'no admin password is configured',
    service_unavailable: 'the session store does not answer (Retry-After)',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const s = ctx.deps
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
      await auditOf(s, req, undefined)('admin.login_failed', null)
      throw new ApiError('invalid_password', 'wrong password')
    }
    await s.loginGuard.succeeded(ticket)
    const { id, session } = await s.sessions.start(cookieValue(req, SESSION_COOKIE))
    res.cookie(SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      secure: req.secure,
      maxAge: ABSOLUTE_TIMEOUT_MS,
    })
    await auditOf(s, req, session)('admin.login', null)
    res.set('Cache-Control', 'no-store')
    return reply(200, {
      ok: true as const,
      expiresAt: new Date(session.createdAt.getTime() + ABSOLUTE_TIMEOUT_MS).toISOString(),
    })
  },
})

export const adminLogoutOperation = define({
  ...admin,
  name: 'adminLogout',
  summary: 'End the session',
  route: { method: 'post', path: '/api/admin/logout' },
  input: {},
  responses: { 200: { description: 'logged out', schema: ZOk } },
  errors: {},
  async handler(_input, ctx) {
    const { req, res } = expressOf(ctx)
    await ctx.deps.sessions.end(cookieValue(req, SESSION_COOKIE))
    await auditOf(ctx.deps, req, ctx.caller)('admin.logout', null)
    res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: req.secure })
    return reply(200, { ok: true as const })
  },
})

export const listSharesOperation = define({
  ...admin,
  name: 'listShares',
  summary: 'List shares (paginated, filterable, sortable)',
  route: { method: 'get', path: '/api/admin/shares' },
  input: { query: ZShareList },
  responses: { 200: { description: 'a page of shares', schema: ZAdminShareList } },
  errors: {},
  async handler({ query }, { deps }) {
    const { items, total } = await deps.shareAdmin.listShares(query)
    return reply(200, {
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
        // Encrypted end to end in the sender's browser: the names below are placeholders.
        encrypted: sh.encryption !== null,
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
  },
})

export const deleteShareOperation = define({
  ...admin,
  name: 'deleteShare',
  summary: 'Delete a share and its files',
  route: { method: 'delete', path: '/api/admin/shares' },
  input: { body: ZDeleteShare },
  responses: { 200: { description: 'deleted', schema: ZShareDeleted } },
  errors: { share_not_found: 'no such share' },
  async handler({ body }, ctx) {
    const share = await ctx.deps.shareAdmin.removeShareByCode(body.code)
    await auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)('share.delete', body.code, {
      files: share.files.length,
    })
    return reply(200, { deleted: true as const, code: body.code })
  },
})

export const cleanupOrphansOperation = define({
  ...admin,
  name: 'cleanupOrphans',
  summary: 'Remove orphan files',
  route: { method: 'post', path: '/api/admin/shares' },
  input: { body: ZShareAction },
  responses: { 200: { description: 'what was removed', schema: ZCleanupResult } },
  errors: {},
  async handler(_input, ctx) {
    const result = await ctx.deps.cleanup.removeOrphans()
    await auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)('shares.cleanup', null, { ...result })
    return reply(200, result)
  },
})

export const getSettingsOperation = define({
  ...admin,
  name: 'getSettings',
  summary: 'Site settings',
  route: { method: 'get', path: '/api/admin/settings' },
  input: {},
  responses: { 200: { description: 'settings', schema: ZSettings } },
  errors: {},
  async handler(_input, { deps }) {
    return reply(200, await deps.settings.get())
  },
})

export const putSettingsOperation = define({
  ...admin,
  name: 'putSettings',
  summary: 'Change site settings (any subset)',
  route: { method: 'put', path: '/api/admin/settings' },
  input: { body: ZSettingsPatch },
  responses: { 200: { description: 'saved settings', schema: ZSettings } },
  errors: {
    bad_request: 'invalid; nothing changed',
    settings_invalid: 'the settings together are invalid; nothing changed',
  },
  async handler({ body }, ctx) {
    const { before, after } = await ctx.deps.settings.update(body)
    const changed = Object.keys(body)
      .filter((k) => before[k as keyof typeof before] !== after[k as keyof typeof after])
      .sort()
    await auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)('settings.update', null, {
      changed,
      values: body,
    })
    return reply(200, after)
  },
})

export const listAuthCodesOperation = define({
  ...admin,
  name: 'listAuthCodes',
  summary: 'Authorization code issuance log',
  route: { method: 'get', path: '/api/admin/authcodes' },
  input: {},
  responses: { 200: { description: 'records', schema: ZAuthCodeList } },
  errors: {},
  async handler(_input, { deps }) {
    const records = await deps.authCodes.list()
    return reply(200, { items: records.map(({ record, status }) => presentCode(record, status)) })
  },
})

export const createAuthCodeOperation = define({
  ...admin,
  name: 'createAuthCode',
  summary: 'Issue an authorization code (shown once)',
  route: { method: 'post', path: '/api/admin/authcodes' },
  input: { body: ZCreateAuthCode },
  responses: { 201: { description: 'the code', schema: ZIssuedAuthCode } },
  errors: {},
  async handler({ body }, ctx) {
    const { code, record } = await ctx.deps.authCodes.issue(body)
    await auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)('authcode.create', record.id, {
      scope: record.scope,
      expiresAt: record.expiresAt.toISOString(),
    })
    return reply(201, { ...presentCode(record, 'unused'), code })
  },
})

export const revokeAuthCodeOperation = define({
  ...admin,
  name: 'revokeAuthCode',
  summary: 'Revoke an unused authorization code',
  route: { method: 'delete', path: '/api/admin/authcodes' },
  input: { body: ZRevokeAuthCode },
  responses: { 200: { description: 'revoked', schema: ZAuthCodeRecord } },
  errors: { auth_code_not_found: 'unknown id', conflict: 'already used or revoked' },
  async handler({ body }, ctx) {
    const record = await ctx.deps.authCodes.revoke(body.id)
    await auditOf(ctx.deps, expressOf(ctx).req, ctx.caller)('authcode.revoke', record.id)
    return reply(200, presentCode(record, 'revoked'))
  },
})

export const auditLogOperation = define({
  ...admin,
  name: 'auditLog',
  summary: 'The admin audit log, newest first',
  route: { method: 'get', path: '/api/admin/audit' },
  input: { query: ZAuditQuery },
  responses: { 200: { description: 'entries', schema: ZAuditList } },
  errors: {},
  async handler({ query }, { deps }) {
    const entries = await deps.audit.list(query)
    return reply(200, { items: entries.map((e) => ({ ...e, at: e.at.toISOString() })) })
  },
})

/** The admin operations; the login first, as it needs no session. */
export const adminOperations = [
  adminLoginOperation,
  adminLogoutOperation,
  listSharesOperation,
  deleteShareOperation,
  cleanupOrphansOperation,
  getSettingsOperation,
  putSettingsOperation,
  listAuthCodesOperation,
  createAuthCodeOperation,
  revokeAuthCodeOperation,
  auditLogOperation,
] as const satisfies ReadonlyArray<AnyOperation<Services>>

function presentCode(
  r: {
    id: string
    hint: string
    note: string | null
    scope: 'downloads' | 'size' | 'both'
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
    status: status as z.infer<typeof ZAuthCodeRecord>['status'],
    createdAt: r.createdAt.toISOString(),
    expiresAt: r.expiresAt.toISOString(),
    usedAt: r.usedAt?.toISOString() ?? null,
    usedByShare: r.usedByShareCode,
    revokedAt: r.revokedAt?.toISOString() ?? null,
  }
}
