import { databaseReadiness } from '@quartet/core/db'
import type { KeyValueStore } from '@quartet/core/kv'
import { createHttpApp } from '@quartet/core/http'
import type { Logger } from '@quartet/core/log'
import { serveOpenApi } from '@quartet/core/openapi'
import type { Express } from 'express'
import type { TConfig } from './config.ts'
import type { ReleaseCache } from './domain/release-cache.ts'
import { installCorsOnApiAnswers } from './http/documents.ts'
import { installDocumentFastPath } from './http/fast-path.ts'
import { designArchiveOpenApi, mountDocumentOperations } from './http/operations.ts'
import type { Db } from './store/db.ts'

export interface AppDeps {
  config: Pick<TConfig, 'TRUST_PROXY' | 'METRICS_TOKEN'> &
    Partial<Pick<TConfig, 'CACHE_CONTROL' | 'DOCUMENT_ACCESS_LOG'>>
  logger: Logger
  db: Db
  kv: KeyValueStore
  /** The releases served from memory; main.ts loads and polls it. */
  releases: ReleaseCache
}

export const DEFAULT_CACHE_CONTROL = 'public, max-age=300, stale-while-revalidate=86400'

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  const cacheControl = deps.config.CACHE_CONTROL ?? DEFAULT_CACHE_CONTROL
  const { app, observe } = createHttpApp(
    {
      name: 'design-archive',
      logger: deps.logger,
      envelope: 'code',
      trustProxy: deps.config.TRUST_PROXY,
      // Documents are read-only: no request body is read (a POST is 405, whatever it carries).
      bodyLimit: false,
      metricsToken: deps.config.METRICS_TOKEN,
      readiness: {
        // Documents are served from memory: only a loaded release is needed. The database is
        // where new releases come from (reported, never a reason to leave the load balancer).
        database: { ...databaseReadiness(deps.db), optional: true },
        release: async () => {
          if (!deps.releases.current()) throw new Error('no release loaded')
        },
      },
    },
    (app) => {
      serveOpenApi(app, designArchiveOpenApi)
      mountDocumentOperations(app, { cache: deps.releases, cacheControl })
    },
  )
  // Document hits skip express and the per-request access log unless DOCUMENT_ACCESS_LOG is on.
  if (!deps.config.DOCUMENT_ACCESS_LOG)
    installDocumentFastPath(app, { cache: deps.releases, cacheControl, observe })
  // After the fast path, so it runs only for what the fast path leaves to express.
  installCorsOnApiAnswers(app)
  return app
}
