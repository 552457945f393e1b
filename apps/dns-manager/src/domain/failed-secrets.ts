import { ApiError } from '@quartet/core/errors'
import type { KeyValueStore } from '@quartet/core/kv'
import { addressKey, createRateLimiter } from '@quartet/core/rate-limit'
import type { KvRead, ReadAhead } from './ports.ts'

/**
 * Budgets of failed authentications (a wrong key or secret), counted in kv so every replica
 * shares them. The README ("Failed secrets") gives the numbers and the reasoning.
 *
 * - Per client address (IPv6 by its /64): strict. Once an address has spent it, every attempt
 *   with credentials from that address is refused until the window ends, the right secret too
 *   (else the budget would not bound guessing), and before the database is asked.
 * - Per API key: generous, and it never refuses an address with no failure of its own in the
 *   window. So a key under a distributed attack costs each attacking address its first wrong
 *   guess and refuses it from then on, while the owner, whose address has not failed, still gets
 *   in: spending the key's budget does not lock the owner out.
 */
export interface FailedSecretGuard {
  /**
   * Before anything is looked up: refuses (429) an address that has spent its budget. Reads the
   * kv keys `readAhead` in the same command (a cached credential's version tokens), through
   * `read` when given (a command that also spends the credential's rate-limit points).
   */
  admit(ip: string | undefined, readAhead?: readonly string[], read?: KvRead): Promise<Attempt>
  /** A wrong key or secret: counted, then 401, or 429 once past a budget. */
  failed(attempt: Attempt, credentialId: string | null): Promise<never>
  /** The right secret: 429 only when the key is past its budget and this address has failed before. */
  succeeded(attempt: Attempt, credentialId: string): Promise<void>
}

/** What the guard knew of an address before its secret was checked. */
export interface Attempt {
  address: string
  /** Failures of this address in the current window (0 when kv could not be read). */
  failures: number
  /** The values of the keys `admit` was asked to read ahead. */
  readAhead: ReadAhead
}

export interface FailedSecretLimits {
  windowSec: number
  perAddress: number
  perKey: number
  /** Leading bits of an IPv6 address that name one client (RATE_LIMIT_IPV6_PREFIX). */
  ipv6Prefix: number
}

const BY_ADDRESS = 'dns-manager:auth-failures:address'
const BY_KEY = 'dns-manager:auth-failures:key'

export function createFailedSecretGuard(kv: KeyValueStore, limits: FailedSecretLimits): FailedSecretGuard {
  const perAddress = createRateLimiter({
    kv,
    name: BY_ADDRESS,
    points: limits.perAddress,
    durationSec: limits.windowSec,
  })
  const perKey = createRateLimiter({
    kv,
    name: BY_KEY,
    points: limits.perKey,
    durationSec: limits.windowSec,
  })

  /**
   * A limiter's counter, read without spending from it. Core's limiter has no such read; its
   * counters are the kv keys `rl:<name>:<key>` (documented in core's rate-limit.ts), and a test
   * (failed-secrets.test.ts, "the right secret too") fails if that ever changes. While kv cannot
   * answer this is 0: the failures themselves are still counted by the limiter (in memory per
   * process when Redis is down), so wrong secrets stay limited. One Redis command: every
   * authentication makes this read, and only a refusal asks for the window's end as well.
   */
  async function countOf(limiterName: string, key: string): Promise<number> {
    return toCount(await orNull(kv.get(`rl:${limiterName}:${key}`)))
  }

  async function refusalFor(limiterName: string, key: string): Promise<ApiError> {
    const ttlMs = await orNull(kv.ttlMs(`rl:${limiterName}:${key}`))
    return refusal(new Date(Date.now() + (ttlMs ?? limits.windowSec * 1000)))
  }

  return {
    async admit(ip, readAhead = [], read = (keys) => kv.getMany(keys)) {
      const address = addressKey(ip, limits.ipv6Prefix)
      const askedAt = performance.now()
      const keys = [`rl:${BY_ADDRESS}:${address}`]
      for (const key of readAhead) keys.push(key)
      const values = await read(keys).catch(unreadable)
      const failures = toCount(values?.[0] ?? null)
      if (failures >= limits.perAddress) throw await refusalFor(BY_ADDRESS, address)
      return { address, failures, readAhead: values ? { values: values.slice(1), askedAt } : 'unreadable' }
    },

    async failed(attempt, credentialId) {
      // Unknown keys are counted per address only: a counter per made-up key would let anyone fill kv.
      const [byAddress, byKey] = await Promise.all([
        perAddress.consume(attempt.address),
        credentialId === null ? null : perKey.consume(credentialId),
      ])
      if (!byAddress.allowed) throw refusal(byAddress.resetAt)
      if (byKey && !byKey.allowed) throw refusal(byKey.resetAt)
      throw new ApiError('auth_invalid_credentials', 'API key or secret is invalid')
    },

    succeeded(attempt, credentialId) {
      // Every authentication ends here: without a failure of this address, no promise of its own.
      if (attempt.failures === 0) return ADMITTED
      return countOf(BY_KEY, credentialId).then(async (count) => {
        if (count >= limits.perKey) throw await refusalFor(BY_KEY, credentialId)
      })
    },
  }
}

const ADMITTED: Promise<void> = Promise.resolve()

/** A kv read that failed (core's Redis client fails a command unanswered in 500 ms) reads as null. */
const unreadable = (): null => null

function toCount(value: string | null): number {
  const count = Number(value ?? 0)
  return Number.isSafeInteger(count) ? count : 0
}

/** A kv read, or null when it fails (core's Redis client fails a command unanswered in 500 ms). */
async function orNull<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read
  } catch {
    return null
  }
}

/**
 * The same answer whichever budget was spent, and whether or not the key exists, so a refusal
 * tells nothing about the key. Like every rate limit: 429 with details.reset_at and Retry-After.
 */
function refusal(resetAt: Date): ApiError {
  const seconds = Math.max(1, Math.ceil((resetAt.getTime() - Date.now()) / 1000))
  const at = new Date(Math.max(resetAt.getTime(), Date.now() + 1000))
  return new ApiError(
    'rate_limit_exceeded',
    'too many failed authentication attempts; retry after details.reset_at',
    { reset_at: at.toISOString() },
    { headers: { 'Retry-After': String(seconds) } },
  )
}
