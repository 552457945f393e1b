import { randomBytes } from 'node:crypto'
import { type Clock, systemClock } from '@quartet/core/clock'
import { type KeyValueStore, RedisKeyValueStore } from '@quartet/core/kv'
import type { Logger } from '@quartet/core/log'
import { createRateLimiter, DEFAULT_IPV6_PREFIX } from '@quartet/core/rate-limit'
import type { TConfig } from './config.ts'
import { AdminSessions } from './domain/admin-sessions.ts'
import { AuthCodes } from './domain/auth-codes.ts'
import { Cleanup } from './domain/cleanup.ts'
import { DownloadGate } from './domain/download-gate.ts'
import { DownloadTransfers } from './domain/downloads.ts'
import { GuessGuard } from './domain/guess-guard.ts'
import { SharePasswords } from './domain/share-passwords.ts'
import { LoginGuard } from './domain/login-guard.ts'
import { SettingsService } from './domain/settings.ts'
import { ShareService } from './domain/shares.ts'
import { StorageRegistry } from './domain/storage.ts'
import { StoreInstances } from './domain/store-instances.ts'
import { ClientTokenUploads } from './domain/client-token-uploads.ts'
import { ResumableUploads } from './domain/resumable-uploads.ts'
import { UploadReservations } from './domain/upload-reservations.ts'
import { UploadTokens } from './domain/upload-token.ts'
import { WindowCounters } from './domain/window-counters.ts'
import type { Services } from './http/services.ts'
import { BlobStore } from './storage/blob-store.ts'
import { BucketStore } from './storage/bucket-store.ts'
import { builtinRepoStore, driverFactory, type FactoryConfig, type FactoryDeps } from './storage/factory.ts'
import { RedisLocker } from './storage/redis-locker.ts'
import { TusEndpoints } from './storage/tus-endpoints.ts'
import { TUS_BASE_PATH } from './http/tus.ts'
import { AllowanceRepository } from './store/allowance-repository.ts'
import { AuditRepository } from './store/audit-repository.ts'
import { type KvDeadlineOptions, withKvDeadline } from './store/kv-deadline.ts'
import { AuthCodeRepository } from './store/auth-code-repository.ts'
import type { Db } from './store/db.ts'
import { InstanceRepository } from './store/instance-repository.ts'
import { SettingsRepository } from './store/settings-repository.ts'
import { ShareRepository } from './store/share-repository.ts'
import { TransferRepository } from './store/transfer-repository.ts'

/** The config createServices reads (main passes the whole config; tests a literal). */
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
  FactoryConfig

export interface ServiceDeps {
  config: ServicesConfig
  logger: Logger
  db: Db
  kv: KeyValueStore
  clock?: Clock
  /** Deadline and pause of kv calls (store/kv-deadline.ts); tests shorten them. */
  kvDeadline?: KvDeadlineOptions
  /** How long a pickup-code check waits for its address's checks in flight (guess-guard.ts). */
  guessWaitMs?: number
}

/** The storage instances from config: blob always, bucket when S3 is configured. */
export function buildStorage(
  config: ServicesConfig,
  tokens: UploadTokens,
  deps?: Omit<FactoryDeps, 'config' | 'tokens'>,
): StorageRegistry {
  const registry = new StorageRegistry()
  registry.add(
    new BlobStore({
      dir: config.BLOB_DIR,
      uploadUrl: '/api/blob/upload',
      signUpload: (c) => tokens.sign({ ...c, pathname: c.pathname }),
    }),
  )
  if (config.S3_ENDPOINT && config.S3_ACCESS_KEY && config.S3_SECRET_KEY && config.S3_BUCKET) {
    registry.add(
      new BucketStore({
        endpoint: config.S3_ENDPOINT,
        accessKey: config.S3_ACCESS_KEY,
        secretKey: config.S3_SECRET_KEY,
        bucket: config.S3_BUCKET,
        region: config.S3_REGION,
        pathStyle: config.S3_PATH_STYLE,
        postPolicy: config.S3_POST_POLICY,
      }),
    )
  }
  const repo = deps ? builtinRepoStore({ ...deps, config, tokens }) : null
  if (repo) registry.add(repo)
  return registry
}

export function createServices(deps: ServiceDeps): Services & { gate: DownloadGate } {
  const clock = deps.clock ?? systemClock
  const { config, logger, db } = deps
  // Every kv call answers within a deadline: take, download and the limits go on without kv.
  const kv = withKvDeadline(deps.kv, deps.kvDeadline)
  const kvTrouble = kvFallbackLogger(logger)
  const secret = config.UPLOAD_TOKEN_SECRET ?? randomBytes(32).toString('hex')
  const tokens = new UploadTokens(secret, clock)
  const storage = buildStorage(config, tokens, { db, kv, logger })
  const shareRepo = new ShareRepository(db)
  let removeShare: (id: string) => Promise<unknown> = async () => null
  const instances = new StoreInstances({
    repo: new InstanceRepository(db),
    storage,
    factory: driverFactory({ config, tokens, db, kv, logger }),
    logger,
    removeShare: (id) => removeShare(id),
    // Called later, once reservations (below) exists.
    releasedWithInstance: (rows): Promise<void> => reservations.releasedWithInstance(rows),
  })
  const uploadWindow = config.UPLOAD_LIMIT_WINDOW_SECONDS
  const reservations = new UploadReservations({
    uploads: shareRepo,
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
    locker: deps.kv instanceof RedisKeyValueStore ? new RedisLocker(deps.kv.redis) : null,
    expiryMs: tusExpiryMs,
    driver: (id) => instances.driver(id),
    logger,
  })
  const resumable = new ResumableUploads({
    uploads: shareRepo,
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
  const shares = new ShareService({
    shares: shareRepo,
    uploads: shareRepo,
    storage,
    instances,
    settings,
    authCodes,
    gate,
    transfers,
    guard,
    passwords,
    reservations,
    tokens,
    clock,
    logger,
    uploadTtlSeconds: config.UPLOAD_TOKEN_TTL_SECONDS,
    orphanAfterHours: config.ORPHAN_AFTER_HOURS,
  })
  removeShare = (id) => shares.removeShare(id, false) // an admin deleting a store's shares
  const cleanup = new Cleanup({
    shares: shareRepo,
    uploads: shareRepo,
    service: shares,
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
    shares,
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
    logger,
    adminAllowedOrigins: config.ADMIN_ALLOWED_ORIGINS,
    guard,
    passwords,
    ipv6Prefix: config.RATE_LIMIT_IPV6_PREFIX ?? DEFAULT_IPV6_PREFIX,
    gate,
    resumable,
    tus,
    clientTokens: new ClientTokenUploads({
      shares,
      uploads: shareRepo,
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
