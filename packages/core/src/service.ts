import path from 'node:path'
import type { Express } from 'express'
import { dependencyFailure } from './errors.ts'
import { serve, type Serving } from './http.ts'
import { createKeyValueStore, type KeyValueStore } from './kv.ts'
import { createLogger, type Logger } from './log.ts'
import { applyMigrations } from './migrate.ts'

/** The config every app shares (see config.ts `baseConfigShape`). */
export interface BaseConfig {
  PORT: number
  HOST: string
  DATABASE_URL: string
  DATABASE_SCHEMA: string
  DATABASE_POOL_SIZE: number
  DATABASE_CONNECT_TIMEOUT_MS: number
  DATABASE_QUERY_TIMEOUT_MS: number
  MIGRATE_ON_START: boolean
  REDIS_URL?: string | undefined
  REDIS_KEY_PREFIX: string
  REDIS_COMMAND_TIMEOUT_MS: number
  TRUST_PROXY: number | string[]
  LOG_LEVEL: string
  BODY_LIMIT: string
  SHUTDOWN_TIMEOUT_MS: number
  SHUTDOWN_DELAY_MS: number
  METRICS_PORT?: number | undefined
  METRICS_HOST?: string | undefined
  METRICS_TOKEN?: string | undefined
  RATE_LIMIT_IPV6_PREFIX: number
}

export interface ServiceRuntime<C extends BaseConfig> {
  config: C
  logger: Logger
  kv: KeyValueStore
  /**
   * Start-up work against Postgres or Redis (loading what the service serves), retried while the
   * dependency is unavailable — a deadline passed on a machine busy starting many replicas at
   * once, a server still starting — for up to START_RETRY_MS; any other failure is fatal at once.
   */
  whenAvailable<T>(what: string, work: () => Promise<T>): Promise<T>
}

/** How long start-up work waits for an unavailable dependency before the service gives up. */
export const START_RETRY_MS = 60_000

async function whenAvailable<T>(logger: Logger, what: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + START_RETRY_MS
  for (let attempt = 1; ; attempt++) {
    try {
      return await work()
    } catch (err) {
      if (dependencyFailure(err) !== 'unavailable' || Date.now() > deadline) throw err
      logger.warn({ err, attempt }, `${what}: a dependency did not answer in time; trying again`)
      await new Promise((r) => setTimeout(r, Math.min(2000, 250 * attempt)))
    }
  }
}

export interface BuiltService {
  app: Express
  /** Closes what `build` opened (database pools, clients), after in-flight requests finish. */
  close(): Promise<void>
}

/** Where an app's migrations live, from its src/ or dist/ folder (both sit one level below the app). */
export function migrationsDirFrom(dirname: string): string {
  return path.resolve(dirname, '..', 'prisma', 'migrations')
}

/**
 * The start-up every service shares: logger, migrations (unless switched off), kv (Redis, or
 * memory with one warning), the app, and `serve` with graceful shutdown that closes it all.
 */
export async function runService<C extends BaseConfig>(options: {
  name: string
  loadConfig: () => C
  migrationsDir: string
  build: (runtime: ServiceRuntime<C>) => Promise<BuiltService> | BuiltService
}): Promise<Serving> {
  let config: C
  try {
    config = options.loadConfig()
  } catch (err) {
    // Fail fast with the message that names the variable; no stack trace needed.
    process.stderr.write(`${options.name}: ${(err as Error).message}\n`)
    process.exit(78) // EX_CONFIG
  }
  const logger = createLogger({ name: options.name, level: config.LOG_LEVEL })
  try {
    if (config.MIGRATE_ON_START) {
      const result = await applyMigrations({
        connectionString: config.DATABASE_URL,
        schema: config.DATABASE_SCHEMA,
        migrationsDir: options.migrationsDir,
        log: (message, fields) => logger.info(fields ?? {}, message),
      })
      logger.info({ schema: config.DATABASE_SCHEMA, ...result }, 'migrations up to date')
    }
    const kv = createKeyValueStore({
      redisUrl: config.REDIS_URL,
      keyPrefix: config.REDIS_KEY_PREFIX,
      commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
    })
    if (kv.kind === 'memory') {
      logger.warn(
        'REDIS_URL is not set: counters, rate limits and sessions live in this process (single node only)',
      )
    }
    const built = await options.build({
      config,
      logger,
      kv,
      whenAvailable: (what, work) => whenAvailable(logger, what, work),
    })
    return await serve(built.app, {
      port: config.PORT,
      host: config.HOST,
      logger,
      shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
      shutdownDelayMs: config.SHUTDOWN_DELAY_MS,
      metricsPort: config.METRICS_PORT,
      metricsHost: config.METRICS_HOST,
      onShutdown: [() => built.close(), () => kv.close()],
    })
  } catch (err) {
    logger.fatal({ err }, 'start-up failed')
    logger.flush()
    process.exit(1)
  }
}
