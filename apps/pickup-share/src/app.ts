import { randomBytes } from 'node:crypto'
import { type Clock, systemClock } from '@quartet/core/clock'
import { databaseReadiness } from '@quartet/core/db'
import { createHttpApp } from '@quartet/core/http'
import { type KeyValueStore, RedisKeyValueStore } from '@quartet/core/kv'
import type { Logger } from '@quartet/core/log'
import { serveOpenApi } from '@quartet/core/openapi'
import { createRateLimiter, DEFAULT_IPV6_PREFIX } from '@quartet/core/rate-limit'
import type { Express } from 'express'
import type { TConfig } from './config.ts'
import { AdminSessions } from './domain/admin-sessions.ts'
import { AuthCodes } from './domain/auth-codes.ts'
import { Cleanup } from './domain/cleanup.ts'
import { ClientTokenUploads } from './domain/client-token-uploads.ts'
import { ConnectionTests } from './domain/connection-tests.ts'
import { DownloadGate } from './domain/download-gate.ts'
import { DownloadTransfers } from './domain/downloads.ts'
import './domain/errors.ts'
import { GuessGuard } from './domain/guess-guard.ts'
import { LoginGuard } from './domain/login-guard.ts'
import { Pickup } from './domain/pickup.ts'
import { ResumableUploads } from './domain/resumable-uploads.ts'
import { SettingsService } from './domain/settings.ts'
import { ShareAdmin } from './domain/share-admin.ts'
import { ShareDownloads } from './domain/share-downloads.ts'
import { SharePasswords } from './domain/share-passwords.ts'
import { ShareRemoval } from './domain/share-removal.ts'
import { ShareCreation } from './domain/shares.ts'
import { StorageInstances } from './domain/storage-instances.ts'
import { UploadPermissions } from './domain/upload-permissions.ts'
import { UploadReservations } from './domain/upload-reservations.ts'
import { UploadTokens } from './domain/upload-token.ts'
import { WindowCounters } from './domain/window-counters.ts'
import { registerAdminGuards } from './http/admin.ts'
import { adminPathGuard } from './http/auth.ts'
import { registerDownloadMethods } from './http/download.ts'
import { registerGuessMetrics, registerPasswordMetrics } from './http/metrics.ts'
import { hotRoutes, mount, pickupShareOpenApi } from './http/operations.ts'
import type { Services } from './http/services.ts'
import { adminOperations } from './http/admin.ts'
import { downloadOperations } from './http/download.ts'
import { shareOperations } from './http/share.ts'
import { storeOperations } from './http/stores.ts'
import { registerTus, TUS_BASE_PATH } from './http/tus.ts'
import { deferContinue } from './http/upload-connection.ts'
import { blobUploadOperation, isStreamedUpload, repoUploadOperation } from './http/upload.ts'
import { registerUploadRequests, vercelBlobPutOperation } from './http/vercel-blob.ts'
import { registerWeb, uploadOrigins, webHelmetOptions, webOperations } from './http/web.ts'
import { type BuiltinStorageConfig, buildStorage, driverFactory } from './drivers/factory.ts'
import { RedisLocker } from './drivers/redis-locker.ts'
import { TusEndpoints } from './drivers/tus-endpoints.ts'
import { AllowanceRepository } from './store/allowance-repository.ts'
import { AuditRepository } from './store/audit-repository.ts'
import { AuthCodeRepository } from './store/auth-code-repository.ts'
import type { Db } from './store/db.ts'
import { InstanceRepository } from './store/instance-repository.ts'
import { IssuedUploadRepository } from './store/issued-upload-repository.ts'
import { type KvDeadlineOptions, withKvDeadline } from './store/kv-deadline.ts'
import { SettingsRepository } from './store/settings-repository.ts'
import { ShareRepository } from './store/share-repository.ts'
import { TransferRepository } from './store/transfer-repository.ts'

/** The config the use cases and adapters read (main passes the whole config; tests a literal). */
export type ServicesConfig = Pick<
  TConfig,
  | 'BLOB_DIR'
  | 'S3_ENDPOINT'
  | 'S3_ACCESS_KEY'
  | 'S3_SECRET_KEY'
  | 'S3_BUCKET'
  | 'S3_REGION'
  | 'S3_PATH_STYLE'
  | 'S3_POST_POLICY'
  | 'ADMIN_PASSWORD_HASH'
  | 'ADMIN_PASSWORD'
  | 'UPLOAD_TOKEN_SECRET'
  | 'UPLOAD_TOKEN_TTL_SECONDS'
  | 'UPLOAD_PERMISSIONS_PER_ADDRESS'
  | 'UPLOAD_PERMISSIONS_GLOBAL'
  | 'UPLOAD_LIMIT_WINDOW_SECONDS'
  | 'UPLOAD_PENDING_BYTES_PER_ADDRESS'
  | 'UPLOAD_PENDING_BYTES_GLOBAL'
  | 'ORPHAN_AFTER_HOURS'
  | 'ADMIN_ALLOWED_ORIGINS'
> &
  Partial<
    Pick<
      TConfig,
      | 'RATE_LIMIT_IPV6_PREFIX'
      | 'DOWNLOAD_RESUME_WINDOW_SECONDS'
      | 'DOWNLOAD_RESUME_SLACK_BYTES'
      | 'TUS_EXPIRY_SECONDS'
      | 'UPLOAD_PENDING_STORE_FRACTION'
      | 'UPLOAD_IDLE_RELEASE_SECONDS'
    >
  > &
  BuiltinStorageConfig

export interface AppDeps {
  config: Pick<TConfig, 'TRUST_PROXY' | 'BODY_LIMIT' | 'METRICS_TOKEN'> &
    Partial<Pick<TConfig, 'WEB_CONNECT_SRC'>> &
    ServicesConfig
  logger: Logger
  db: Db
  kv: KeyValueStore
  clock?: Clock
  /** Deadline and pause of kv calls (store/kv-deadline.ts); tests shorten them. */
  kvDeadline?: KvDeadlineOptions
  /** How long a pickup-code check waits for its address's checks in flight (guess-guard.ts). */
  guessWaitMs?: number
}

/** The app and the use cases behind it (main.ts runs the sweeper on them, cli.ts its commands). */
export interface PickupShare {
  app: Express
  services: Services & { gate: DownloadGate }
}

/** The OpenAPI document /openapi.json serves, generated from the operations (http/operations.ts). */
export const openApiDocument = pickupShareOpenApi

/**
 * The composition root: builds the repositories (src/store) and the storage drivers, hands each
 * use case (src/domain) the ports it needs, and mounts the operations (src/http) on core's app
 * builder. No listen(): tests run the app in-process with real dependencies.
 */
export function buildPickupShare(deps: AppDeps): PickupShare {
  const services = wireServices(deps)
  const { app, metrics } = createHttpApp(
    {
      name: 'pickup-share',
      logger: deps.logger,
      envelope: 'code',
      trustProxy: deps.config.TRUST_PROXY,
      bodyLimit: deps.config.BODY_LIMIT,
      metricsToken: deps.config.METRICS_TOKEN,
      // Audio and video of an encrypted share play from a blob the pickup page decrypted.
      helmet: webHelmetOptions(uploadOrigins(deps.config), ['blob:']),
      // Only the database decides readiness: take, download, upload and share work without kv
      // (README "Without Redis"), so a load balancer must not take every replica out when Redis
      // goes away; kv is reported only.
      readiness: {
        database: databaseReadiness(deps.db),
        kv: { check: () => deps.kv.ping(), optional: true },
      },
      hotRoutes: hotRoutes(services, webOperations),
    },
    (app) => {
      serveOpenApi(app, openApiDocument)
      registerUploadRequests(app, services)
      mount(app, services, [vercelBlobPutOperation, blobUploadOperation, repoUploadOperation])
      registerTus(app, services)
      mount(app, services, shareOperations)
      mount(app, services, downloadOperations)
      registerDownloadMethods(app)
      // The CSRF guard before every admin path, the login included; the session check is each
      // operation's auth, and adminPathGuard's for the admin paths no operation serves.
      registerAdminGuards(app, services)
      mount(app, services, adminOperations)
      mount(app, services, storeOperations)
      app.use('/api/admin', adminPathGuard(services))
      mount(app, services, webOperations)
      registerWeb(app)
    },
  )
  registerGuessMetrics(metrics, services.guard)
  registerPasswordMetrics(metrics, services.passwords)
  // An upload about to be refused is refused before its body is asked for.
  deferContinue(app, isStreamedUpload)
  return { app, services }
}

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  return buildPickupShare(deps).app
}

/** The repositories and drivers, handed to the use cases as their ports (cli.ts uses them without the app). */
export function wireServices(deps: AppDeps): Services & { gate: DownloadGate } {
  const clock = deps.clock ?? systemClock
  const { config, logger, db } = deps
  // Every kv call answers within a deadline: take, download and the limits go on without kv.
  const kv = withKvDeadline(deps.kv, deps.kvDeadline)
  const kvTrouble = kvFallbackLogger(logger)
  const secret = config.UPLOAD_TOKEN_SECRET ?? randomBytes(32).toString('hex')
  const tokens = new UploadTokens(secret, clock)
  const storage = buildStorage(config, tokens, { db, kv, logger })
  const shareRepo = new ShareRepository(db)
  const issuedUploads = new IssuedUploadRepository(db)
  let removeShare: (id: string) => Promise<unknown> = async () => null
  const instanceRepo = new InstanceRepository(db)
  const factory = driverFactory({ config, tokens, db, kv, logger })
  const instances = new StorageInstances({
    repo: instanceRepo,
    storage,
    factory,
    logger,
    removeShare: (id) => removeShare(id),
    // Called later, once reservations (below) exists.
    releasedWithInstance: (rows): Promise<void> => reservations.releasedWithInstance(rows),
  })
  const uploadWindow = config.UPLOAD_LIMIT_WINDOW_SECONDS
  const reservations = new UploadReservations({
    uploads: issuedUploads,
    allowances: new AllowanceRepository(db),
    instances,
    limits: {
      // Counted in kv, per process while kv fails (core's limiter).
      permissionsPerAddress: createRateLimiter({
        kv,
        name: 'upload:address',
        points: config.UPLOAD_PERMISSIONS_PER_ADDRESS,
        durationSec: uploadWindow,
      }),
      permissionsGlobal: createRateLimiter({
        kv,
        name: 'upload:all',
        points: config.UPLOAD_PERMISSIONS_GLOBAL,
        durationSec: uploadWindow,
      }),
      pendingBytesPerAddress: config.UPLOAD_PENDING_BYTES_PER_ADDRESS,
      pendingBytesGlobal: config.UPLOAD_PENDING_BYTES_GLOBAL,
      permissionTtlMs: config.UPLOAD_TOKEN_TTL_SECONDS * 1000,
      pendingStoreFraction: config.UPLOAD_PENDING_STORE_FRACTION ?? 0.25,
      idleReleaseMs: (config.UPLOAD_IDLE_RELEASE_SECONDS ?? 300) * 1000,
    },
    clock,
    logger,
  })
  // Resumable uploads: a tus server per instance; locks in Redis so replicas share them.
  // Never longer than an unshared upload may live (ORPHAN_AFTER_HOURS): orphan clean-up would
  // delete the permission of an upload still resumable, and its partial data with nobody to expire it.
  const tusExpiryMs = Math.min(
    (config.TUS_EXPIRY_SECONDS ?? 86_400) * 1000,
    config.ORPHAN_AFTER_HOURS * 3_600_000,
  )
  const tus = new TusEndpoints({
    basePath: TUS_BASE_PATH,
    locker: deps.kv instanceof RedisKeyValueStore ? new RedisLocker(deps.kv) : null,
    expiryMs: tusExpiryMs,
    driver: (id) => instances.driver(id),
    tokens,
    logger,
  })
  const resumable = new ResumableUploads({
    uploads: issuedUploads,
    instances,
    reservations,
    tokens,
    data: tus,
    clock,
    logger,
    expiryMs: tusExpiryMs,
  })
  tus.setHooks(resumable)
  const settings = new SettingsService(new SettingsRepository(db))
  const authCodes = new AuthCodes(new AuthCodeRepository(db), clock)
  const gate = new DownloadGate(kv, shareRepo, clock, kvTrouble)
  const transfers = new DownloadTransfers({
    repo: new TransferRepository(db),
    gate,
    clock,
    rule: {
      windowMs: (config.DOWNLOAD_RESUME_WINDOW_SECONDS ?? 86_400) * 1000,
      slackBytes: config.DOWNLOAD_RESUME_SLACK_BYTES ?? 16 * 1024 * 1024,
    },
  })
  const counters = new WindowCounters(kv, kvTrouble)
  const guard = new GuessGuard(counters, clock, logger, deps.guessWaitMs)
  const passwords = new SharePasswords({
    counters,
    clock,
    secret,
    grantTtlMs: (config.DOWNLOAD_RESUME_WINDOW_SECONDS ?? 86_400) * 1000,
    ...(deps.guessWaitMs !== undefined ? { inFlightWaitMs: deps.guessWaitMs } : {}),
  })
  const removal = new ShareRemoval({ shares: shareRepo, gate, instances, storage, clock, logger })
  removeShare = (id) => removal.remove(id, false) // an admin deleting a store's shares
  const uploads = new UploadPermissions({
    uploads: issuedUploads,
    instances,
    reservations,
    settings,
    authCodes,
    tokens,
    clock,
    logger,
    uploadTtlSeconds: config.UPLOAD_TOKEN_TTL_SECONDS,
  })
  const cleanup = new Cleanup({
    shares: shareRepo,
    uploads: issuedUploads,
    removal,
    reservations,
    storage,
    clock,
    logger,
    orphanAfterHours: config.ORPHAN_AFTER_HOURS,
    uploadWindowMs: config.UPLOAD_TOKEN_TTL_SECONDS * 1000,
    syncInstances: () => instances.sync(),
    resumable,
  })
  return {
    uploads,
    sharing: new ShareCreation({
      shares: shareRepo,
      uploads: issuedUploads,
      storage,
      instances,
      settings,
      authCodes,
      gate,
      passwords,
      reservations,
      tokens,
      clock,
      orphanAfterHours: config.ORPHAN_AFTER_HOURS,
    }),
    pickup: new Pickup({ shares: shareRepo, settings, guard, passwords, clock }),
    downloads: new ShareDownloads({
      shares: shareRepo,
      settings,
      guard,
      passwords,
      transfers,
      instances,
      removeShare: (id) => removal.remove(id),
      clock,
    }),
    shareAdmin: new ShareAdmin({ shares: shareRepo, removal, clock }),
    cleanup,
    authCodes,
    settings,
    loginGuard: new LoginGuard(counters),
    sessions: new AdminSessions(kv, clock, {
      hash: config.ADMIN_PASSWORD_HASH,
      plain: config.ADMIN_PASSWORD,
    }),
    audit: new AuditRepository(db),
    storage,
    instances,
    connectionTests: new ConnectionTests({ instances, repo: instanceRepo, factory, logger }),
    logger,
    adminAllowedOrigins: config.ADMIN_ALLOWED_ORIGINS,
    guard,
    passwords,
    ipv6Prefix: config.RATE_LIMIT_IPV6_PREFIX ?? DEFAULT_IPV6_PREFIX,
    gate,
    resumable,
    tus,
    clientTokens: new ClientTokenUploads({
      permissions: uploads,
      uploads: issuedUploads,
      reservations,
      settings,
      tokens,
      clock,
    }),
  }
}

/** Logs that limits count per process because kv failed: at most once a minute, not per request. */
function kvFallbackLogger(logger: Logger): (err: unknown) => void {
  let next = 0
  return (err) => {
    const now = Date.now()
    if (now < next) return
    next = now + 60_000
    logger.warn(
      { err },
      'kv unavailable: limits count in this process and downloads in Postgres alone until it answers again',
    )
  }
}
