import type { IncomingMessage } from 'node:http'
import { ApiError } from '@quartet/core/errors'
import { type AuthBinding, defineAuth, resolveWith } from '@quartet/core/operation'
import { cookieValue } from '@quartet/core/web'
import type { Request, RequestHandler, Response } from 'express'
import type { PeopleUseCases } from '../../domain/people.ts'
import { SESSION_ABSOLUTE_MS } from '../../domain/people-common.ts'

/**
 * Who may call the back office's operations: anyone (core's publicAccess: the site facts,
 * sign-up, sign-in, reset) or the holder of a page session (the qdm_session cookie). Every path
 * under /account/api passes core's CSRF guard first (register.ts), so a write without
 * X-Requested-With is refused before the session is looked at, and the session before the input.
 */

/** The back office's session cookie (Quartet DNS Manager). */
export const SESSION_COOKIE = 'qdm_session'

/** The principal of a page session: an API principal (`via: 'web'`) with the account's address. */
export type SessionPrincipal = NonNullable<Awaited<ReturnType<PeopleUseCases['sessionPrincipal']>>>

/** A signed-in person: the session cookie, resumed before any input is looked at. */
export const accountSession = defineAuth<SessionPrincipal>({
  name: 'accountSession',
  security: ['accountSession'],
  errors: { session_required: 'sign in first: no session, or it ended (idle, 12 hours, signed out)' },
})

/** The session's principal, or the 401 every signed-in path answers without one. */
async function sessionOf(people: PeopleUseCases, req: IncomingMessage): Promise<SessionPrincipal> {
  const express = req as Request
  const principal = await people.sessionPrincipal(cookieValue(express, SESSION_COOKIE), express.ip)
  if (!principal) throw new ApiError('session_required', 'sign in first (POST /account/api/signin)')
  return principal
}

/** How the back office resolves accountSession. */
export function backOfficeAuth(people: PeopleUseCases): AuthBinding<unknown>[] {
  return [resolveWith(accountSession, (req) => sessionOf(people, req))] as AuthBinding<unknown>[]
}

/**
 * The session check of every other path under /account/api (a path or method no operation
 * serves): 401 without a session, as before the back office was defined by operations; with one,
 * the request goes on to the back office's 404.
 */
export function sessionGuard(people: PeopleUseCases): RequestHandler {
  return async (req, _res, next) => {
    await sessionOf(people, req)
    next()
  }
}

export function setSessionCookie(req: Request, res: Response, value: string): void {
  res.cookie(SESSION_COOKIE, value, {
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    // Behind Caddy on https (trust proxy): Secure. Plain http on localhost: a cookie that works.
    secure: req.secure,
    maxAge: SESSION_ABSOLUTE_MS,
  })
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'strict', secure: req.secure })
}
