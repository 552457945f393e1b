import { databaseReadiness } from '@quartet/core/db'
import type { KeyValueStore } from '@quartet/core/kv'
import type { Clock } from '@quartet/core/clock'
import { createHttpApp } from '@quartet/core/http'
import type { Logger } from '@quartet/core/log'
import { createOpenApiDocument, serveOpenApi } from '@quartet/core/openapi'
import type { Express } from 'express'
import type { TConfig } from './config.ts'
import './domain/errors.ts'
import { adminOperations, registerAdmin, SESSION_COOKIE } from './http/admin.ts'
import { registerGuessMetrics, registerPasswordMetrics } from './http/metrics.ts'
import type { Services } from './http/services.ts'
import { registerShare, shareOperations } from './http/share.ts'
import { registerStores, storeOperations } from './http/stores.ts'
import { deferContinueOnListen } from './http/upload-connection.ts'
import { registerTus, tusOperations } from './http/tus.ts'
import { registerVercelBlob, vercelBlobOperations } from './http/vercel-blob.ts'
import { isStreamedUpload, registerUpload, uploadOperations } from './http/upload.ts'
import { registerWeb, siteInfoRoute, uploadOrigins, webHelmetOptions, webOperations } from './http/web.ts'
import { createServices, type ServicesConfig } from './services.ts'
import type { Db } from './store/db.ts'

export interface AppDeps {
  config: Pick<TConfig, 'TRUST_PROXY' | 'BODY_LIMIT' | 'METRICS_TOKEN'> &
    Partial<Pick<TConfig, 'WEB_CONNECT_SRC'>> &
    ServicesConfig
  logger: Logger
  db: Db
  kv: KeyValueStore
  clock?: Clock
  /** Already built services (main shares them with the sweeper); built from config otherwise. */
  services?: Services
}

export const openApiDocument = () =>
  createOpenApiDocument(
    {
      title: 'pickup-share',
      version: '1.0.0',
      description: 'File sharing with pickup codes: client-direct uploads, counted downloads, an admin area.',
      securitySchemes: { adminSession: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE } },
    },
    [
      ...uploadOperations,
      ...tusOperations,
      ...vercelBlobOperations,
      ...shareOperations,
      ...adminOperations,
      ...storeOperations,
      ...webOperations,
    ],
  )

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  const services = deps.services ?? createServices(deps)
  const site = siteInfoRoute(services)
  const { app, metrics } = createHttpApp(
    {
      name: 'pickup-share',
      logger: deps.logger,
      envelope: 'code',
      trustProxy: deps.config.TRUST_PROXY,
      bodyLimit: deps.config.BODY_LIMIT,
      metricsToken: deps.config.METRICS_TOKEN,
      helmet: webHelmetOptions(uploadOrigins(deps.config)),
      // Only the database decides readiness: take, download, upload and share work without kv
      // (README "Without Redis"), so a load balancer must not take every replica out when Redis
      // goes away; kv is reported only.
      readiness: {
        database: databaseReadiness(deps.db),
        kv: { check: () => deps.kv.ping(), optional: true },
      },
      hotRoutes: [site],
    },
    (app) => {
      serveOpenApi(app, openApiDocument)
      registerVercelBlob(app, services)
      registerUpload(app, services)
      registerTus(app, services)
      registerShare(app, services)
      registerAdmin(app, services)
      registerStores(app, services)
      registerWeb(app, site)
    },
  )
  registerGuessMetrics(metrics, services.guard)
  registerPasswordMetrics(metrics, services.passwords)
  // An upload about to be refused is refused before its body is asked for.
  deferContinueOnListen(app, isStreamedUpload)
  return app
}
