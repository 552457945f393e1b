import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'

export interface DatabaseOptions {
  url: string
  /** The Postgres schema this app owns (`key_info`, …). */
  schema: string
  poolSize: number
  /** Deadlines of every connection (PoolDeadlines); the defaults when left out. */
  deadlines?: Partial<PoolDeadlines>
}

/**
 * How long a request may wait on Postgres before it is answered 503 (errors.ts maps what these
 * throw): a dead or frozen server must not hold a request for longer than about two seconds.
 */
export interface PoolDeadlines {
  /** To open a connection (TCP + start-up) or to wait for a free one in the pool. */
  connectTimeoutMs: number
  /**
   * A query's answer: the server cancels the statement after this (`statement_timeout`, which
   * also bounds lock waits), and the client stops waiting shortly after, for a server that
   * cannot even cancel (frozen, partitioned). 0: no deadline (migrations, long operator jobs).
   */
  queryTimeoutMs: number
}

export const DEFAULT_POOL_DEADLINES: PoolDeadlines = { connectTimeoutMs: 1000, queryTimeoutMs: 1500 }

/**
 * Pool deadlines (db.ts) for the embedded Postgres: it serves one session at a time, so a
 * connection may wait its turn for seconds, and it cannot cancel a statement. The launcher and
 * the test helpers use these when they start it; production's defaults are about a second.
 */
export const EMBEDDED_DEADLINES: PoolDeadlines = { connectTimeoutMs: 30_000, queryTimeoutMs: 0 }

/** The client waits this much longer than the server's statement_timeout, so the server's cancel normally wins. */
const CLIENT_GRACE_MS = 250

/**
 * A pg pool with deadlines (PoolDeadlines): the one way every app, the migration applier and
 * the readiness probes connect. An idle client losing its server must not crash the process:
 * its error is swallowed here and the next checkout reconnects.
 */
export function createPgPool(
  url: string,
  options: { max?: number; deadlines?: Partial<PoolDeadlines> } = {},
): pg.Pool {
  const { connectTimeoutMs, queryTimeoutMs } = { ...DEFAULT_POOL_DEADLINES, ...options.deadlines }
  const config: pg.PoolConfig = {
    connectionString: url,
    max: options.max ?? 2,
    connectionTimeoutMillis: connectTimeoutMs,
    // Keep-alive probes find a peer that vanished without a FIN (a partition, a killed VM).
    keepAlive: true,
  }
  if (queryTimeoutMs > 0) {
    config.statement_timeout = queryTimeoutMs
    config.query_timeout = queryTimeoutMs + CLIENT_GRACE_MS
  }
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  return pool
}

/**
 * Builds an app's generated PrismaClient over `@prisma/adapter-pg` (Prisma 7: no Rust engine at
 * run time) bound to the app's own schema, on a pool with deadlines. Generic over the client class
 * so core never imports an app's generated code. `$disconnect()` ends the pool.
 */
export function createPrismaClient<C>(
  PrismaClient: new (options: { adapter: PrismaPg }) => C,
  options: DatabaseOptions,
): C {
  const pool = createPgPool(options.url, { max: options.poolSize, deadlines: options.deadlines })
  return new PrismaClient({
    adapter: new PrismaPg(pool, { schema: options.schema, disposeExternalPool: true }),
  })
}

/** Quote a Postgres identifier (schema names come from config, but never trust a string into SQL). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** The database options of an app's base config, with an optional smaller pool (CLI commands). */
export function databaseOptions(
  config: {
    DATABASE_URL: string
    DATABASE_SCHEMA: string
    DATABASE_POOL_SIZE: number
    DATABASE_CONNECT_TIMEOUT_MS: number
    DATABASE_QUERY_TIMEOUT_MS: number
  },
  poolSize = config.DATABASE_POOL_SIZE,
): DatabaseOptions {
  return {
    url: config.DATABASE_URL,
    schema: config.DATABASE_SCHEMA,
    poolSize,
    deadlines: {
      connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
      queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    },
  }
}
