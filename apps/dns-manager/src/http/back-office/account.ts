import { reply } from '@quartet/core/operation'
import { cookieValue } from '@quartet/core/web'
import { accountSession, clearSessionCookie, SESSION_COOKIE, setSessionCookie } from './auth.ts'
import {
  ZAccountAnswer,
  ZAccountSettings,
  ZAuditAnswer,
  ZAuditQuery,
  ZChangePassword,
  ZOkAnswer,
  ZSessionAnswer,
} from './contracts.ts'
import { backOffice, CSRF_ERRORS, define, expressOf } from './deps.ts'

/**
 * The back office of a signed-in person (domain/people-account-settings.ts, people-sessions.ts):
 * signing out, the account, its API switch and IP allow list, the password, the audit log. Each
 * resolves the session cookie (accountSession) before its input is looked at.
 */

const signedIn = { ...backOffice, auth: accountSession }

export const signoutOperation = define({
  ...signedIn,
  name: 'signout',
  summary: 'End this session',
  route: { method: 'post', path: '/account/api/signout' },
  input: {},
  responses: { 200: { description: 'signed out', schema: ZOkAnswer } },
  errors: { ...CSRF_ERRORS },
  async handler(_input, ctx) {
    const { req, res } = expressOf(ctx)
    await ctx.deps.people.signOut(cookieValue(req, SESSION_COOKIE), ctx.caller)
    clearSessionCookie(req, res)
    return reply(200, { success: true as const })
  },
})

export const accountOperation = define({
  ...signedIn,
  name: 'account',
  summary: 'The account: address, balance, quota, API switch, IP allow list, the caller’s address',
  route: { method: 'get', path: '/account/api/account' },
  input: {},
  responses: { 200: { description: 'the account', schema: ZAccountAnswer } },
  errors: {},
  async handler(_input, { caller, deps }) {
    return reply(200, { success: true as const, ...(await deps.people.account(caller)) })
  },
})

export const accountSettingsOperation = define({
  ...signedIn,
  name: 'accountSettings',
  summary: 'The API access switch and the IP allow list',
  route: { method: 'post', path: '/account/api/account/settings' },
  input: { body: ZAccountSettings },
  responses: { 200: { description: 'the account', schema: ZAccountAnswer } },
  errors: {
    ...CSRF_ERRORS,
    bad_request:
      'invalid input, or an entry of ip_allow_list that is no address or CIDR range (field ip_allow_list)',
  },
  async handler({ body }, { caller, deps }) {
    return reply(200, { success: true as const, ...(await deps.people.updateAccountSettings(caller, body)) })
  },
})

export const changePasswordOperation = define({
  ...signedIn,
  name: 'changePassword',
  summary: 'Change the password; every session ends and this browser gets a new one',
  route: { method: 'post', path: '/account/api/account/password' },
  input: { body: ZChangePassword },
  responses: { 200: { description: 'changed', schema: ZSessionAnswer } },
  errors: {
    ...CSRF_ERRORS,
    bad_request: 'invalid input, or a new password shorter than the rule (details.field)',
    auth_invalid_password: 'the current password is wrong',
    rate_limit_exceeded: 'too many attempts from this address or for this account (Retry-After)',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const session = await ctx.deps.people.changePassword(ctx.caller, body)
    setSessionCookie(req, res, session.sessionId)
    return reply(200, { success: true as const, expires_at: session.expiresAt.toISOString() })
  },
})

export const auditLogOperation = define({
  ...signedIn,
  name: 'auditLog',
  summary: 'What the API and the pages did on the account, from where; newest first',
  route: { method: 'get', path: '/account/api/audit' },
  input: { query: ZAuditQuery },
  responses: { 200: { description: 'entries', schema: ZAuditAnswer } },
  errors: {},
  async handler({ query }, { caller, deps }) {
    return reply(200, { success: true as const, ...(await deps.people.auditLog(caller, query)) })
  },
})

/** The operations of a signed-in person, in the order they are mounted (page-operations.ts has `op/:name`). */
export const accountOperations = [
  signoutOperation,
  accountOperation,
  accountSettingsOperation,
  changePasswordOperation,
  auditLogOperation,
] as const
