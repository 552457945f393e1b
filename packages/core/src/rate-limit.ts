import type { ServerResponse } from 'node:http'
import type { Request, RequestHandler } from 'express'
import type { Redis } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { ApiError } from './errors.ts'
import type { KeyValueStore } from './kv.ts'

export interface RateLimitDecision {
  allowed: boolean
  limit: number
  remaining: number
  resetAt: Date
}

export interface RateLimiter {
  readonly points: number
  readonly durationSec: number
  /** Spend `cost` points for `key`. Never throws for a refusal: look at `allowed`. */
  consume(key: string, cost?: number): Promise<RateLimitDecision>
}

/**
 * A fixed-window limiter on rate-limiter-flexible. With Redis, counts are shared by every replica
 * and an in-memory insurance limiter takes over while Redis is unreachable (fail soft, still
 * limited); without Redis, memory alone (single node).
 */
export function createRateLimiter(options: {
  kv: KeyValueStore
  /** Namespaces this limiter's keys, e.g. "key-info:key". */
  name: string
  points: number
  durationSec: number
}): RateLimiter {
  const { points, durationSec, name } = options
  const memory = new RateLimiterMemory({ points, duration: durationSec, keyPrefix: `rl:${name}` })
  const redis = options.kv.kind === 'redis' ? (options.kv as unknown as { redis: Redis }).redis : undefined
  const untilFirstConnection = redis ? firstConnection(redis) : async () => {}
  const limiter = redis
    ? new RateLimiterRedis({
        storeClient: redis,
        points,
        duration: durationSec,
        keyPrefix: `rl:${name}`,
        insuranceLimiter: memory,
        rejectIfRedisNotReady: true,
      })
    : memory

  return {
    points,
    durationSec,
    async consume(key, cost = 1) {
      await untilFirstConnection()
      try {
        const res = await limiter.consume(key, cost)
        return decision(true, points, res)
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return decision(false, points, rejection)
        throw rejection
      }
    },
  }
}

/**
 * With `rejectIfRedisNotReady`, a client that is still making its first connection counts as
 * down, so a freshly started replica would count its first requests in memory only, apart from
 * its peers. Wait (bounded) for that first connection; after it, a lost connection fails over to
 * the insurance limiter at once.
 */
function firstConnection(redis: Redis, timeoutMs = 2000): () => Promise<void> {
  let pending: Promise<void> | undefined =
    redis.status === 'ready'
      ? undefined
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs)
          timer.unref()
          redis.once('ready', () => {
            clearTimeout(timer)
            resolve()
          })
        }).then(() => {
          pending = undefined
        })
  return async () => {
    if (pending) await pending
  }
}

function decision(allowed: boolean, limit: number, res: RateLimiterRes): RateLimitDecision {
  return {
    allowed,
    limit,
    remaining: Math.max(0, res.remainingPoints),
    resetAt: new Date(Date.now() + res.msBeforeNext),
  }
}

/**
 * Sets the IETF draft headers (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` in
 * seconds) on every answer, and `Retry-After` on a refusal.
 */
export function setRateLimitHeaders(res: Pick<ServerResponse, 'setHeader'>, d: RateLimitDecision): void {
  const resetSec = Math.max(0, Math.ceil((d.resetAt.getTime() - Date.now()) / 1000))
  res.setHeader('RateLimit-Limit', String(d.limit))
  res.setHeader('RateLimit-Remaining', String(d.remaining))
  res.setHeader('RateLimit-Reset', String(resetSec))
  if (!d.allowed) res.setHeader('Retry-After', String(Math.max(1, resetSec)))
}

/** The refusal every service throws: 429 rate_limit_exceeded with details.reset_at (ISO 8601). */
export function rateLimitError(d: RateLimitDecision, message = 'rate limit exceeded'): ApiError {
  const retryAfter = Math.max(1, Math.ceil((d.resetAt.getTime() - Date.now()) / 1000))
  return new ApiError(
    'rate_limit_exceeded',
    message,
    { reset_at: d.resetAt.toISOString(), limit: d.limit },
    { headers: { 'Retry-After': String(retryAfter) } },
  )
}

/**
 * Express middleware: limits by `keyOf(req)` (default: the client address express resolved
 * with `trust proxy`, the same `req.ip` the IP allow lists use). Returning null skips limiting.
 */
export function rateLimitMiddleware(
  limiter: RateLimiter,
  keyOf: (req: Request) => string | null = (req) => req.ip ?? 'unknown',
): RequestHandler {
  return async (req, res, next) => {
    const key = keyOf(req)
    if (key === null) {
      next()
      return
    }
    const d = await limiter.consume(key)
    setRateLimitHeaders(res, d)
    if (!d.allowed) throw rateLimitError(d)
    next()
  }
}
