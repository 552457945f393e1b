import type { Request, RequestHandler } from 'express'
import ipaddr from 'ipaddr.js'
import { ApiError } from './errors.ts'
import type { HeaderSink } from './http.ts'
import { type KeyValueStore, MemoryKeyValueStore, type WindowHit } from './kv.ts'

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
  /**
   * `consume`, and read the kv keys `reads` in the same round trip: with Redis, one command for
   * a hot path that needs both. `values` follows `reads` (null for a missing key), or is null
   * when kv could not be read (the decision then came from the in-memory insurance limiter).
   */
  consumeAndRead(key: string, reads: readonly string[], cost?: number): Promise<DecisionAndValues>
  /**
   * `count` points for `key` in one round trip, decided as `count` calls of `consume` in a row
   * would be: the decision of each point, in order (the first ones allowed, those past the limit
   * refused). For a request that stands for several counted calls.
   */
  consumeEach(key: string, count: number): Promise<RateLimitDecision[]>
  /** `consumeEach`, and read the kv keys `reads` in the same round trip (as `consumeAndRead`). */
  consumeEachAndRead(key: string, count: number, reads: readonly string[]): Promise<DecisionsAndValues>
}

export interface DecisionAndValues {
  decision: RateLimitDecision
  values: Array<string | null> | null
}

export interface DecisionsAndValues {
  decisions: RateLimitDecision[]
  values: Array<string | null> | null
}

/**
 * A fixed-window limiter on kv's hitWindow: with Redis, counts are shared by every replica (a
 * Lua script, reads included, group-committed with other calls) and an in-process memory store
 * takes over while Redis is unreachable or slow to answer (fail soft, still limited, per
 * process); with memory kv, that alone (single node).
 * Counter keys are `rl:<name>:<key>`, the names rate-limiter-flexible's RateLimiterRedis used
 * before this replaced it, so counts carry over a deploy.
 */
export function createRateLimiter(options: {
  kv: KeyValueStore
  /** Namespaces this limiter's keys, e.g. "key-info:key". */
  name: string
  points: number
  durationSec: number
}): RateLimiter {
  const { points, durationSec, name, kv } = options
  const insurance = new MemoryKeyValueStore()
  const windowMs = durationSec * 1000
  /** The decision for a window's count, `count` points spent in it (the hit's count, or one before it). */
  const decisionAt = (count: number, resetAt: Date): RateLimitDecision => ({
    allowed: count <= points,
    limit: points,
    remaining: Math.max(0, points - count),
    resetAt,
  })
  const resetOf = (h: WindowHit): Date => new Date(Date.now() + h.ttlMs)
  // Promise chains rather than async functions: consume runs on every request, and each async
  // layer is one more promise and suspended frame of garbage.
  const insuranceHit = async (counter: string, cost: number): Promise<WindowHit> => ({
    ...(await insurance.hitWindow(counter, cost, windowMs)),
    values: null,
  })
  const hit = (key: string, reads: readonly string[], cost: number): Promise<WindowHit> => {
    if (!Number.isSafeInteger(cost) || cost < 1)
      return Promise.reject(new Error(`rate limit cost must be a positive integer, got ${cost}`))
    const counter = `rl:${name}:${key}`
    // kv failed this call (Redis down or not connected): count in this process, read nothing.
    return kv.hitWindow(counter, cost, windowMs, reads).catch(() => insuranceHit(counter, cost))
  }
  const decisionOf = (h: WindowHit): RateLimitDecision => decisionAt(h.count, resetOf(h))
  const decisionAndValuesOf = (h: WindowHit): DecisionAndValues => ({
    decision: decisionOf(h),
    values: h.values,
  })
  /**
   * The decision of each of the hit's `count` points, in order (the window's count after each).
   * They share one `resetAt` (the same window's end): ten decisions, each with its own Date, were
   * 6% of the bytes a kept JSON-RPC batch answer allocated.
   */
  const decisionsOf = (h: WindowHit, count: number): RateLimitDecision[] => {
    const resetAt = resetOf(h)
    const decisions: RateLimitDecision[] = []
    for (let n = h.count - count + 1; n <= h.count; n++) decisions.push(decisionAt(n, resetAt))
    return decisions
  }
  return {
    points,
    durationSec,
    consume: (key, cost = 1) => hit(key, NO_READS, cost).then(decisionOf),
    consumeAndRead: (key, reads, cost = 1) => hit(key, reads, cost).then(decisionAndValuesOf),
    consumeEach: (key, count) => hit(key, NO_READS, count).then((h) => decisionsOf(h, count)),
    consumeEachAndRead: (key, count, reads) =>
      hit(key, reads, count).then((h) => ({ decisions: decisionsOf(h, count), values: h.values })),
  }
}

const NO_READS: readonly string[] = Object.freeze([])

/**
 * Sets the IETF draft headers (`RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` in
 * seconds) on every answer, and `Retry-After` on a refusal.
 */
export function setRateLimitHeaders(res: HeaderSink, d: RateLimitDecision): void {
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

/** How many leading bits of an IPv6 address name one client (config RATE_LIMIT_IPV6_PREFIX). */
export const DEFAULT_IPV6_PREFIX = 64

/**
 * The rate-limit key of a client address: an IPv4 address as it is (an IPv4-mapped IPv6 one as
 * its IPv4 form), an IPv6 address as its network of `ipv6Prefix` bits (`2001:db8:1:2::/64`). One
 * host is routinely given a whole /64, so limiting each full IPv6 address would give it 2^64
 * budgets. Anything that does not parse is used as it is.
 */
export function addressKey(ip: string | undefined, ipv6Prefix = DEFAULT_IPV6_PREFIX): string {
  if (!ip) return 'unknown'
  // Every authenticated request asks this of its client's address, and a parse is several
  // objects: the answers of the addresses seen lately are kept (a pure function of the two).
  let known = addressKeys.get(ipv6Prefix)
  if (!known) addressKeys.set(ipv6Prefix, (known = new Map()))
  const kept = known.get(ip)
  if (kept !== undefined) return kept
  const key = parsedAddressKey(ip, ipv6Prefix)
  if (known.size >= ADDRESS_KEYS_KEPT) known.clear()
  known.set(ip, key)
  return key
}

/** How many client addresses' keys addressKey keeps, per prefix length; all go when full. */
const ADDRESS_KEYS_KEPT = 4096
const addressKeys = new Map<number, Map<string, string>>()

function parsedAddressKey(ip: string, ipv6Prefix: number): string {
  let addr: ipaddr.IPv4 | ipaddr.IPv6
  try {
    addr = ipaddr.parse(ip)
  } catch {
    return ip
  }
  if (addr.kind() === 'ipv4') return addr.toString()
  const v6 = addr as ipaddr.IPv6
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().toString()
  if (ipv6Prefix >= 128) return v6.toNormalizedString()
  const bytes = v6.toByteArray()
  for (let bit = ipv6Prefix; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7))
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6Prefix}`
}

/**
 * Express middleware: limits by `keyOf(req)` (default: the client address express resolved
 * with `trust proxy`, the same `req.ip` the IP allow lists use, IPv6 by its /64). Returning null
 * skips limiting.
 */
export function rateLimitMiddleware(
  limiter: RateLimiter,
  keyOf: (req: Request) => string | null = (req) => addressKey(req.ip),
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
