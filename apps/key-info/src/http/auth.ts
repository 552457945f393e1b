import { hashToken, parseBearer } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { HeaderSink } from '@quartet/core/http'
import { type RateLimitDecision, rateLimitError, setRateLimitHeaders } from '@quartet/core/rate-limit'
import { type AuthBinding, defineAuth, resolveWith } from '@quartet/core/operation'
import type { IncomingMessage } from 'node:http'
import { authenticate, requireManagementKey } from '../domain/keys.ts'
import type { KeyKvFacts, KeyRow } from '../domain/ports.ts'
import type { RouteDeps } from './deps.ts'

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

/** The 401s and 429 of a bearer key, as every key-info operation documents them. */
const bearerErrors = {
  bad_request: 'more than one Authorization header',
  missing_authentication: 'missing, unknown, disabled or expired key',
  invalid_api_key: 'missing, unknown, disabled or expired key',
  rate_limit_exceeded: 'per-key rate limit',
} as const

/**
 * The holder of a bearer key, as GET /api/v1/key needs it: the key's hash, spent against its
 * rate limit, with what kv holds about it read in the same round trip (the version token of its
 * cached record, today's free-model mirror). The key itself is checked by the use case.
 */
export interface KeyHolder {
  hash: string
  now: Date
  facts: KeyKvFacts
}

export const keyHolder = defineAuth<KeyHolder>({
  name: 'keyHolder',
  security: ['bearer'],
  errors: bearerErrors,
})

/**
 * A management key: 401 for a missing, unknown, disabled or expired key, 429 over the key's rate,
 * then 403 for a key that is not a management key, all before any input is looked at.
 */
export const managementKey = defineAuth<KeyRow>({
  name: 'managementKey',
  security: ['bearer'],
  errors: {
    ...bearerErrors,
    api_key_disabled: bearerErrors.invalid_api_key,
    api_key_expired: bearerErrors.invalid_api_key,
    management_key_required: 'not a management key',
  },
})

/** How key-info resolves its auth requirements, over the route dependencies. */
export function keyInfoAuth(deps: RouteDeps): AuthBinding<unknown>[] {
  return [
    resolveWith(keyHolder, async (req, headers) => {
      const hash = bearerHash(req)
      // One kv round trip: the rate-limit step also brings back what the record read needs.
      const now = deps.keys.clock.now()
      const askedAt = performance.now()
      const { decision, values } = await deps.limiter.consumeAndRead(hash, deps.readAhead.kvKeys(hash, now))
      admit(headers, decision)
      return { hash, now, facts: deps.readAhead.decode(values, askedAt) }
    }),
    resolveWith(managementKey, async (req, headers) => {
      const hash = bearerHash(req)
      admit(headers, await deps.limiter.consume(hash))
      const caller = await authenticate(deps.keys, hash)
      requireManagementKey(caller)
      return caller
    }),
  ]
}

/** Key facts change with every usage event: no cache may keep them, errors included. */
export const NO_STORE = { 'Cache-Control': 'no-store' } as const
