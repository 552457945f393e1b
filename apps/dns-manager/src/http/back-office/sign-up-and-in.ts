import { publicAccess, reply } from '@quartet/core/operation'
import { cookieValue } from '@quartet/core/web'
import { PASSWORD_MIN } from '../../domain/people-common.ts'
import { clearSessionCookie, SESSION_COOKIE, setSessionCookie } from './auth.ts'
import {
  ZCompleteWithPassword,
  ZLinkToken,
  ZMailedAnswer,
  ZResetAnswer,
  ZResetRequest,
  ZSessionAnswer,
  ZSignin,
  ZSignup,
  ZSignupLinkAnswer,
  ZSiteAnswer,
} from './contracts.ts'
import { backOffice, CSRF_ERRORS, define, expressOf } from './deps.ts'

/**
 * The back office before sign-in (domain/people-signup.ts, people-sessions.ts,
 * people-password-reset.ts): what the pages need to know, sign-up through a mailed link, sign-in,
 * and a password reset through a mailed link. Anyone may call them.
 */

const signedOut = { ...backOffice, auth: publicAccess }

/** Spent per client address and per account address (domain/people-common.ts spendAttempt). */
const ATTEMPTS = 'too many attempts from this address or for this address (Retry-After)'

export const siteOperation = define({
  ...signedOut,
  name: 'backOfficeSite',
  summary: 'What the pages need before sign-in: the registration mode and the password rule',
  route: { method: 'get', path: '/account/api/site' },
  input: {},
  responses: { 200: { description: 'site facts', schema: ZSiteAnswer } },
  errors: {},
  async handler(_input, { deps }) {
    return reply(200, {
      success: true as const,
      registration: deps.people.settings.registration,
      password_min: PASSWORD_MIN,
    })
  },
})

export const signupStartOperation = define({
  ...signedOut,
  name: 'signupStart',
  summary: 'Mail a sign-up link (the same answer whether or not the address has an account)',
  route: { method: 'post', path: '/account/api/signup' },
  input: { body: ZSignup },
  responses: { 200: { description: 'mailed', schema: ZMailedAnswer } },
  errors: {
    ...CSRF_ERRORS,
    registration_closed: 'sign-up is closed on this service',
    invite_required: 'REGISTRATION=invite, and no invitation was sent',
    link_invalid: 'the invitation was used, or it expired',
    rate_limit_exceeded: ATTEMPTS,
    mail_unavailable: 'the mail could not be sent (Retry-After)',
  },
  async handler({ body }, ctx) {
    const { req } = expressOf(ctx)
    return reply(200, { success: true as const, ...(await ctx.deps.people.startSignup(body, req.ip)) })
  },
})

export const signupLinkOperation = define({
  ...signedOut,
  name: 'signupLink',
  summary: 'The address a sign-up link is for (400 link_invalid when used or expired)',
  route: { method: 'get', path: '/account/api/signup/link' },
  input: { query: ZLinkToken },
  responses: { 200: { description: 'the address', schema: ZSignupLinkAnswer } },
  errors: { link_invalid: 'the link was used, or it expired' },
  async handler({ query }, { deps }) {
    return reply(200, { success: true as const, ...(await deps.people.signupLink(query)) })
  },
})

export const signupCompleteOperation = define({
  ...signedOut,
  name: 'signupComplete',
  summary: 'Choose a password and create the account; sets the qdm_session cookie',
  route: { method: 'post', path: '/account/api/signup/complete' },
  input: { body: ZCompleteWithPassword },
  responses: { 201: { description: 'signed up and in', schema: ZSessionAnswer } },
  errors: {
    ...CSRF_ERRORS,
    bad_request: 'invalid input, or a password shorter than the rule (details.field)',
    link_invalid: 'the link was used, or it expired',
    account_exists: 'the address has an account already',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const session = await ctx.deps.people.completeSignup(body, req.ip)
    setSessionCookie(req, res, session.sessionId)
    return reply(201, { success: true as const, expires_at: session.expiresAt.toISOString() })
  },
})

export const signinOperation = define({
  ...signedOut,
  name: 'signin',
  summary: 'Sign in; sets the qdm_session cookie',
  route: { method: 'post', path: '/account/api/signin' },
  input: { body: ZSignin },
  responses: { 200: { description: 'signed in', schema: ZSessionAnswer } },
  errors: {
    ...CSRF_ERRORS,
    auth_invalid_password: 'the address or the password is wrong (the same answer for either)',
    rate_limit_exceeded: 'too many attempts from this address or for this account (Retry-After)',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const { people } = ctx.deps
    // A sign-in ends the session this browser had (the id rotates).
    const previous = cookieValue(req, SESSION_COOKIE)
    if (previous) await people.signOut(previous, null)
    const session = await people.signIn(body, req.ip)
    setSessionCookie(req, res, session.sessionId)
    return reply(200, { success: true as const, expires_at: session.expiresAt.toISOString() })
  },
})

export const resetRequestOperation = define({
  ...signedOut,
  name: 'resetRequest',
  summary: 'Mail a password-reset link (the same answer whether or not the address has an account)',
  route: { method: 'post', path: '/account/api/reset' },
  input: { body: ZResetRequest },
  responses: { 200: { description: 'mailed if the address has an account', schema: ZMailedAnswer } },
  errors: {
    ...CSRF_ERRORS,
    rate_limit_exceeded: ATTEMPTS,
    mail_unavailable: 'the mail could not be sent (Retry-After)',
  },
  async handler({ body }, ctx) {
    const { req } = expressOf(ctx)
    return reply(200, { success: true as const, ...(await ctx.deps.people.requestReset(body, req.ip)) })
  },
})

export const resetCompleteOperation = define({
  ...signedOut,
  name: 'resetComplete',
  summary: 'Set a new password with a mailed link; every session of the account ends',
  route: { method: 'post', path: '/account/api/reset/complete' },
  input: { body: ZCompleteWithPassword },
  responses: { 200: { description: 'password set', schema: ZResetAnswer } },
  errors: {
    ...CSRF_ERRORS,
    bad_request: 'invalid input, or a password shorter than the rule (details.field)',
    link_invalid: 'the link was used, or it expired',
  },
  async handler({ body }, ctx) {
    const { req, res } = expressOf(ctx)
    const done = await ctx.deps.people.completeReset(body, req.ip)
    clearSessionCookie(req, res)
    return reply(200, { success: true as const, ...done })
  },
})

/** The operations anyone may call, in the order they are mounted. */
export const signUpAndInOperations = [
  siteOperation,
  signupStartOperation,
  signupLinkOperation,
  signupCompleteOperation,
  signinOperation,
  resetRequestOperation,
  resetCompleteOperation,
] as const
