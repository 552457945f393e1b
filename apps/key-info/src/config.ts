import { baseConfigShape, type Env, loadConfig, zInt } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3002, schema: 'key_info', appName: 'key-info' }),
  /** Requests per minute per API key on every /api/v1 route (429 with Retry-After above it). */
  KEY_RATE_LIMIT_PER_MINUTE: zInt(600, 1, 1_000_000_000),
  /** Default free-model requests per UTC day for a key that sets none (not on the free tier). */
  FREE_MODEL_DAILY_LIMIT: zInt(1000, 0, 100_000_000),
  /** The same default for free-tier keys. */
  FREE_TIER_FREE_MODEL_DAILY_LIMIT: zInt(50, 0, 100_000_000),
  /**
   * With Redis, each process caches GET /api/v1/key's record of a key until a write replaces the
   * key's version token in Redis; this bounds how long an entry may serve at most (changes made
   * around the service, e.g. by hand in SQL). 0 turns the cache off.
   */
  KEY_CACHE_MAX_AGE_MS: zInt(10_000, 0, 3_600_000),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (KEY_INFO_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'KEY_INFO', env })
