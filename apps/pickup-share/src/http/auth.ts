import type { IncomingMessage } from 'node:http'
import { ApiError } from '@quartet/core/errors'
import { type AuthBinding, defineAuth, resolveWith } from '@quartet/core/operation'
import { cookieValue } from '@quartet/core/web'
import type { Request, RequestHandler } from 'express'
import type { AdminSession } from '../domain/admin-sessions.ts'
import type { Services } from './services.ts'

/**
 * Who may call pickup-share's operations: anyone (core's publicAccess: upload permissions, share
 * creation, take, downloads), the holder of an upload permission's token (the bodies our own
 * stores receive), the holder of a Vercel Blob client token, or an admin with a session.
 */

/** The admin session cookie (the product abbreviation: Quartet Pickup Share). */
export const SESSION_COOKIE = 'qps_session'

/**
 * An admin session (the qps_session cookie), resumed before any input is looked at. Every admin
 * path also passes core's CSRF guard first (app.use in admin.ts): a state-changing request
 * without X-Requested-With, or from an origin not allowed, is refused before this runs.
 */
export const adminSession = defineAuth<AdminSession>({
  name: 'adminSession',
  security: ['adminSession'],
  errors: { session_required: 'no valid session', csrf_rejected: 'CSRF check failed' },
})

/**
 * The X-Upload-Token of a permission from /api/upload. Taken as sent: the use case checks it
 * (upload_token_invalid, upload_token_expired) once it knows the store and the declared length,
 * after the content type was checked, as the upload routes always have.
 */
export const uploadToken = defineAuth<string | undefined>({
  name: 'uploadToken',
  security: ['uploadToken'],
  errors: {},
})

/**
 * A Vercel Blob client token (`Authorization: Bearer vercel_blob_client_…` from /api/upload's
 * client-token answer). Taken as sent: the use case checks it, and the Vercel PUT answers every
 * refusal in the words the Vercel client knows (vercel-blob.ts).
 */
export const clientToken = defineAuth<string | undefined>({
  name: 'clientToken',
  security: ['clientToken'],
  errors: {},
})

/** The admin's session, or the 401 every admin path answers without one. */
async function sessionOf(s: Pick<Services, 'sessions'>, req: IncomingMessage): Promise<AdminSession> {
  const session = await s.sessions.resume(cookieValue(req as Request, SESSION_COOKIE))
  if (!session) throw new ApiError('session_required', 'log in first (POST /api/admin/login)')
  return session
}

/** How pickup-share resolves its auth requirements. */
export function pickupShareAuth(s: Services): AuthBinding<unknown>[] {
  return [
    resolveWith(adminSession, async (req, headers) => {
      const session = await sessionOf(s, req)
      // Only an answer with a session is kept from caches; a 401 carries no Cache-Control.
      headers.setHeader('Cache-Control', 'no-store')
      return session
    }),
    resolveWith(uploadToken, (req) => headerOf(req, 'x-upload-token')),
    resolveWith(clientToken, (req) => headerOf(req, 'authorization')),
  ] as AuthBinding<unknown>[]
}

const headerOf = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/**
 * The session check of every other path under /api/admin (a path or method no operation
 * serves): 401 without a session, as before any admin path was an operation, and the site's
 * 404 with one.
 */
export function adminPathGuard(s: Pick<Services, 'sessions'>): RequestHandler {
  return async (req, res, next) => {
    await sessionOf(s, req)
    res.set('Cache-Control', 'no-store')
    next()
  }
}
