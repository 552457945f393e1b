import { type ErrorDocs, type OperationContext, operationsOver } from '@quartet/core/operation'
import type { Request, Response } from 'express'
import type { PeopleUseCases } from '../../domain/people.ts'
import type { Pipeline } from '../pipeline.ts'

/** What the back office's operations call: the people use cases, and the API's pipeline for `op/:name`. */
export interface BackOfficeDeps {
  people: PeopleUseCases
  pipeline: Pipeline
}

/** The back office's operations, each over its dependencies (register.ts lists and mounts them). */
export const { define, defineRepresentation } = operationsOver<BackOfficeDeps>()

/**
 * The express request and response behind an operation's context: the back office's operations
 * are served by express only (none is hot), and they read what express resolved (the client's
 * address with `trust proxy`, whether the request came over https) and set or clear the cookie.
 */
export function expressOf(ctx: Pick<OperationContext<unknown, unknown>, 'req' | 'headers'>): {
  req: Request
  res: Response
} {
  return { req: ctx.req as Request, res: ctx.headers as Response }
}

/** What every back-office operation shares: its tag, and no cache may keep any of its answers. */
export const backOffice: { tags: string[]; headers: Readonly<Record<string, string>> } = {
  tags: ['back office'],
  headers: { 'Cache-Control': 'no-store' },
}

/** Core's CSRF guard, in front of every path under /account/api (register.ts), refuses a write. */
export const CSRF_ERRORS: ErrorDocs = {
  csrf_rejected: 'a write without X-Requested-With, or from another site',
}
