import { databaseReadiness } from '@quartet/core/db'
import { type Clock, systemClock } from '@quartet/core/clock'
import { createHttpApp } from '@quartet/core/http'
import type { KeyValueStore } from '@quartet/core/kv'
import type { Logger } from '@quartet/core/log'
import { serveOpenApi } from '@quartet/core/openapi'
import { createRateLimiter } from '@quartet/core/rate-limit'
import type { Express } from 'express'
import type { TConfig } from './config.ts'
import { hotRoutesOf, mountOperations } from '@quartet/core/operation/express'
import { keyInfoAuth } from './http/auth.ts'
import { keyInfoOpenApi, keyInfoOperations } from './http/operations.ts'
import type { Db } from './store/db.ts'
import { createStores } from './store/stores.ts'

export type AppConfig = Pick<
  TConfig,
  | 'TRUST_PROXY'
  | 'BODY_LIMIT'
  | 'METRICS_TOKEN'
  | 'KEY_RATE_LIMIT_PER_MINUTE'
  | 'FREE_MODEL_DAILY_LIMIT'
  | 'FREE_TIER_FREE_MODEL_DAILY_LIMIT'
  | 'KEY_CACHE_MAX_AGE_MS'
>

export interface AppDeps {
  config: AppConfig
  logger: Logger
  db: Db
  kv: KeyValueStore
  /** Injectable for tests that stand on a window boundary. */
  clock?: Clock
  /**
   * Cache key records per process (KEY_CACHE_MAX_AGE_MS). Only sound when every process that
   * writes keys or usage shares this kv: main.ts turns it on with Redis, not with the in-process
   * memory kv, which a CLI run cannot reach.
   */
  cacheKeyRecords?: boolean
}

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  const clock = deps.clock ?? systemClock
  const stores = createStores(deps.db, deps.kv, {
    maxAgeMs: deps.cacheKeyRecords ? deps.config.KEY_CACHE_MAX_AGE_MS : 0,
    now: () => clock.now().getTime(),
    onBumpFailed: (err, hashes) =>
      deps.logger.warn(
        { err, keys: hashes },
        'committed key change not announced in kv: cached records may lag for up to KEY_CACHE_MAX_AGE_MS',
      ),
  })
  const keys = {
    keys: stores.keys,
    freeModel: stores.freeModel,
    clock,
    policy: {
      rateLimitPerMinute: deps.config.KEY_RATE_LIMIT_PER_MINUTE,
      freeModelDailyLimit: deps.config.FREE_MODEL_DAILY_LIMIT,
      freeTierFreeModelDailyLimit: deps.config.FREE_TIER_FREE_MODEL_DAILY_LIMIT,
    },
  }
  const routeDeps = {
    keys,
    readAhead: stores.readAhead,
    usage: { usage: stores.usage, freeModel: stores.freeModel, clock },
    // The same kv the stores replace version tokens in: the hot route reads a key's token
    // through this limiter (consumeAndRead), and the cache is only sound if both are one store.
    limiter: createRateLimiter({
      kv: deps.kv,
      name: 'key-info:key',
      points: deps.config.KEY_RATE_LIMIT_PER_MINUTE,
      durationSec: 60,
    }),
  }
  const serving = { deps: routeDeps, auth: keyInfoAuth(routeDeps) }
  const { app } = createHttpApp(
    {
      name: 'key-info',
      logger: deps.logger,
      envelope: 'status',
      trustProxy: deps.config.TRUST_PROXY,
      bodyLimit: deps.config.BODY_LIMIT,
      metricsToken: deps.config.METRICS_TOKEN,
      // GET /api/v1/key, the read every client polls, answered before express.
      hotRoutes: hotRoutesOf(keyInfoOperations, serving),
      readiness: {
        database: databaseReadiness(deps.db),
        // Without Redis the service still serves (limits count per process): reported only.
        kv: { check: () => deps.kv.ping(), optional: true },
      },
    },
    (app) => {
      serveOpenApi(app, keyInfoOpenApi)
      mountOperations(app, keyInfoOperations, serving)
    },
  )
  return app
}
