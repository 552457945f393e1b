import path from 'node:path'
import { ApiError } from '@quartet/core/errors'
import type { AnyOperation } from '@quartet/core/operation'
import { mountOperations } from '@quartet/core/operation/express'
import { csrfGuard, findWebRoot, serveWebBuild } from '@quartet/core/web'
import type { Express } from 'express'
import { accountOperations } from './account.ts'
import { backOfficeAuth, sessionGuard } from './auth.ts'
import type { BackOfficeDeps } from './deps.ts'
import { pageOperation } from './page-operations.ts'
import { signUpAndInOperations } from './sign-up-and-in.ts'

/** The pages: one HTML document; the script renders what the path names. */
export const PAGE_PATHS = ['/', '/account', '/account/*page'] as const

export function webRoot(): string | undefined {
  // Bundled (dist/main.js): dist/web beside it; from src/http/back-office (tsx, jest): the build's.
  return findWebRoot([
    path.resolve(__dirname, 'web'),
    path.resolve(__dirname, '..', '..', '..', 'dist', 'web'),
  ])
}

/**
 * The back office's JSON API under /account/api, every endpoint an operation definition: those
 * anyone may call, then those of a signed-in person, in the order they are mounted. The OpenAPI
 * document (app.ts) lists them from these definitions.
 */
export const backOfficeOperations: readonly AnyOperation<BackOfficeDeps>[] = [
  ...signUpAndInOperations,
  ...accountOperations,
  pageOperation,
]

/**
 * The back office: its JSON API under /account/api (CSRF-guarded writes, session cookie) and its
 * pages. A signed-in request runs the API's operations through the same pipeline as REST, with
 * the session as the principal (rate limit, validation, handler, audit).
 */
export function registerBackOffice(app: Express, deps: BackOfficeDeps & { allowedOrigins: string[] }): void {
  const { people, pipeline } = deps
  // Every answer under /account/api, errors and unknown paths included, is kept by no cache.
  app.use('/account/api', (_req, res, next) => {
    res.set('Cache-Control', 'no-store')
    next()
  })
  app.use('/account/api', csrfGuard(deps.allowedOrigins, 'account'))
  mountOperations(app, backOfficeOperations, { deps: { people, pipeline }, auth: backOfficeAuth(people) })
  // Any other path or method: 401 without a session (as before these were operations), else 404.
  app.use('/account/api', sessionGuard(people))
  app.use('/account/api', () => {
    throw new ApiError('not_found', 'no such back-office route')
  })

  serveWebBuild(app, {
    webRoot,
    pages: PAGE_PATHS,
    buildHint: 'pnpm --filter @quartet/dns-manager build',
  })
}
