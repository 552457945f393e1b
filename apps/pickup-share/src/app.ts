import type { KeyValueStore } from '@quartet/core/kv'
import { createHttpApp } from '@quartet/core/http'
import type { Logger } from '@quartet/core/log'
import type { Express } from 'express'
import type { TConfig } from './config.ts'
import type { Db } from './store/db.ts'

export interface AppDeps {
  config: Pick<TConfig, 'TRUST_PROXY' | 'BODY_LIMIT'>
  logger: Logger
  db: Db
  kv: KeyValueStore
}

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  const { app } = createHttpApp(
    {
      name: 'pickup-share',
      logger: deps.logger,
      envelope: 'code',
      trustProxy: deps.config.TRUST_PROXY,
      bodyLimit: deps.config.BODY_LIMIT,
      readiness: {
        database: () => deps.db.$queryRaw`SELECT 1`,
        kv: () => deps.kv.ping(),
      },
    },
    () => {
      // /api/* and the web pages arrive with the pickup-share issues.
    },
  )
  return app
}
