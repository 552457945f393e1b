import { hashToken, parseBearer } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { HeaderSink } from '@quartet/core/http'
import {
  type RateLimitDecision,
  type RateLimiter,
  rateLimitError,
  setRateLimitHeaders,
} from '@quartet/core/rate-limit'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestHandler, Response } from 'express'
import { authenticate, type KeyDeps, requireManagementKey } from '../domain/keys.ts'
import type { KeyRow } from '../domain/ports.ts'

/** Bearer key → its SHA-256 hash (how keys are stored and named): 401 when there is none. */
export function bearerHash(req: IncomingMessage): string {
  // Node keeps only the first of several Authorization lines in req.headers: a request with a
  // valid key and another credential would pass on the first. Which one the client meant is
  // anyone's guess (a proxy may have added one), so more than one line is refused.
  if (authorizationLines(req.rawHeaders) > 1)
    throw new ApiError('bad_request', 'send exactly one Authorization header, not several')
  const bearer = parseBearer(req.headers.authorization)
  if (bearer.kind === 'missing') throw new ApiError('missing_authentication', 'Missing Authentication header')
  if (bearer.kind === 'wrong_scheme')
    throw new ApiError('invalid_api_key', 'Authorization header must use the Bearer scheme')
  return hashToken(bearer.token)
}

/** How many header lines name Authorization (rawHeaders alternates names and values). */
function authorizationLines(raw: readonly string[]): number {
  let count = 0
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') count++
  return count
}

/** The per-key rate limit's answer: its headers on every response, and the 429 when refused. */
export function admit(res: HeaderSink, decision: RateLimitDecision): void {
  setRateLimitHeaders(res, decision)
  if (!decision.allowed) throw rateLimitError(decision, 'Rate limit exceeded')
}

/**
 * Bearer key → its hash → per-key rate limit. The limit is spent before the database is asked,
 * keyed by the hash (never the key itself), so a flood on one key costs no queries once it is over.
 */
export async function bearerKeyHash(
  req: IncomingMessage,
  res: ServerResponse,
  limiter: RateLimiter,
): Promise<string> {
  const hash = bearerHash(req)
  admit(res, await limiter.consume(hash))
  return hash
}

/**
 * 401 for a missing, unknown, disabled or expired key, 429 over the key's rate, then 403 for a
 * key that is not a management key: all before any input is looked at. The key becomes `callerOf(res)`.
 */
export function managementKey(limiter: RateLimiter, deps: Pick<KeyDeps, 'keys' | 'clock'>): RequestHandler {
  return async (req, res, next) => {
    const caller = await authenticate(deps, await bearerKeyHash(req, res, limiter))
    requireManagementKey(caller)
    res.locals.caller = caller
    next()
  }
}

export function callerOf(res: Response): KeyRow {
  return res.locals.caller as KeyRow
}

/** Key facts change with every usage event: no cache may keep them. */
export const noStore: RequestHandler = (_req, res, next) => {
  res.set('Cache-Control', 'no-store')
  next()
}
