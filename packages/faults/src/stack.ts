import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { OwnPostgres } from './postgres.ts'
import { OwnRedis } from './redis.ts'
import { freePort, Sandbox } from './sandbox.ts'
import { SERVICE_NAMES, type ServiceName, ServiceProcess } from './service-process.ts'

/** After SIGTERM, how long in-flight requests may take: small, so the suite waits little. */
export const SHUTDOWN_TIMEOUT_MS = 3000
/** After SIGTERM, how long the port keeps accepting while readiness says 503. */
export const SHUTDOWN_DELAY_MS = 1000

export interface FaultStack {
  sandbox: Sandbox
  postgres: OwnPostgres
  redis: OwnRedis
  services: Record<ServiceName, ServiceProcess>
  /** pickup-share's admin password. */
  adminPassword: string
  close(): Promise<void>
}

export interface FaultStackOptions {
  /** Variables added to (or replacing) a service's environment, e.g. limits another suite needs raised. */
  env?: Partial<Record<ServiceName, Record<string, string>>>
  /** Where the service logs go (default packages/faults/logs). */
  logDir?: string
  /** Prefix of the temporary folder. */
  sandboxPrefix?: string
}

/**
 * A Postgres cluster and a Redis of the suite's own, and the four built services against
 * them, each in its own schema, on free ports, with the settings a real deployment of them
 * would have (the database DNS provider, a blob folder, an admin password). `logName` names
 * this run's log files (packages/faults/logs/<logName>-<service>.log).
 */
export async function startFaultStack(
  logName: string,
  only: readonly ServiceName[] = SERVICE_NAMES,
  options: FaultStackOptions = {},
): Promise<FaultStack> {
  const sandbox = new Sandbox(options.sandboxPrefix)
  let postgres: OwnPostgres | undefined
  let redis: OwnRedis | undefined
  const services: Partial<Record<ServiceName, ServiceProcess>> = {}
  const close = async () => {
    await Promise.all(Object.values(services).map((s) => s.stop().catch(() => {})))
    for (const s of Object.values(services)) s.closeLog()
    await redis?.close().catch(() => {})
    await postgres?.close().catch(() => {})
    sandbox.close()
  }
  try {
    ;[postgres, redis] = await Promise.all([OwnPostgres.create(sandbox), OwnRedis.create(sandbox)])
    const adminPassword = randomBytes(12).toString('hex')
    const blobDir = sandbox.path('blobs')
    mkdirSync(blobDir, { recursive: true })
    const common = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      NODE_ENV: 'production',
      DATABASE_URL: postgres.url,
      REDIS_URL: redis.url,
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
      // Behind a load balancer: keep accepting (readiness 503) a moment after SIGTERM, so that
      // readiness is seen to flip before the port closes (a preStop pause in Kubernetes).
      SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    }
    const own: Record<ServiceName, Record<string, string>> = {
      'design-archive': {},
      'key-info': {
        // The suite's trickle comes from one key; the limit itself is not under test here.
        KEY_RATE_LIMIT_PER_MINUTE: '1000000',
      },
      'dns-manager': {
        DNS_PROVIDER: 'database',
        RATE_LIMIT_PER_MINUTE: '1000000',
        // Writes a crash left pending are rolled back soon, so the suite can check they were.
        JOBS_INTERVAL_MS: '1000',
        PENDING_TIMEOUT_MS: '3000',
        // Records go to the newest subdomain; should subdomain creates stall a while, the
        // record creates must not start failing on the per-subdomain cap instead.
        MAX_RECORDS_PER_SUBDOMAIN: '100000',
      },
      'pickup-share': {
        BLOB_DIR: blobDir,
        ADMIN_PASSWORD: adminPassword,
        UPLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
      },
    }
    for (const name of only) {
      // /metrics on a port of its own, as a scraper reads it (the soak reads the heap there).
      const env = {
        ...common,
        ...own[name],
        ...options.env?.[name],
        PORT: String(await freePort()),
        METRICS_PORT: String(await freePort()),
        METRICS_HOST: '127.0.0.1',
      }
      services[name] = new ServiceProcess(name, Number(env.PORT), env, sandbox, logName, options.logDir)
    }
    await Promise.all(only.map((name) => services[name]!.start()))
    return {
      sandbox,
      postgres,
      redis,
      services: services as Record<ServiceName, ServiceProcess>,
      adminPassword,
      close,
    }
  } catch (err) {
    await close()
    throw err
  }
}
