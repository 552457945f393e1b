import { randomBytes } from 'node:crypto'
import { PrismaPg } from '@prisma/adapter-pg'
import type pg from 'pg'
import {
  createPgPool,
  ESTABLISH_TIMEOUT_MS,
  PROGRESS,
  type PoolDeadlines,
  type QueryProgress,
} from './db/pool.ts'

export { createPgPool, DEFAULT_POOL_DEADLINES, EMBEDDED_DEADLINES, type PoolDeadlines } from './db/pool.ts'

export interface DatabaseOptions {
  url: string
  /** The Postgres schema this app owns (`key_info`, …). */
  schema: string
  poolSize: number
  /** Deadlines of every connection (PoolDeadlines); the defaults when left out. */
  deadlines?: Partial<PoolDeadlines>
}

/**
 * Builds an app's generated PrismaClient over `@prisma/adapter-pg` (Prisma 7: no Rust engine at
 * run time) bound to the app's own schema, on a pool with deadlines. Generic over the client class
 * so core never imports an app's generated code. `$disconnect()` ends the pool. The pool and the
 * schema stay reachable (rawAccessOf) for the hand-written SQL of hot reads.
 */
export function createPrismaClient<C>(
  PrismaClient: new (options: { adapter: PrismaPg; errorFormat: 'minimal' }) => C,
  options: DatabaseOptions,
): C {
  const pool = createPgPool(options.url, { max: options.poolSize, deadlines: options.deadlines })
  const client = new PrismaClient({
    adapter: new PrismaPg(pool, { schema: options.schema, disposeExternalPool: true }),
    // No code frame in error messages: Prisma reads the calling source file (a bundle of
    // megabytes) synchronously to print one, and when a database outage fails dozens of queries
    // at once that blocked the event loop for over a second.
    errorFormat: 'minimal',
  })
  attachPool(client, pool)
  Object.defineProperty(client, RAW, {
    value: { pool, schema: quoteIdent(options.schema) } satisfies RawAccess,
  })
  return client
}

const POOL = Symbol.for('quartet.pgPool')
const RAW = Symbol.for('quartet.rawAccess')

/** The pg pool under a client made by createPrismaClient, and its schema, quoted for SQL text. */
export interface RawAccess {
  pool: pg.Pool
  schema: string
}

/**
 * The pool and schema under a client made by createPrismaClient (a property, so a test's Proxy
 * of the client has it too); undefined for any other client. Hot reads run hand-written SQL on
 * it: Prisma's planner, interpreter and mapping cost more than such a query itself.
 */
export function rawAccessOf(client: unknown): RawAccess | undefined {
  return (client as { [RAW]?: RawAccess })[RAW]
}

/** Records the pg pool under a Prisma client (a property, so a test's Proxy of the client has it too). */
export function attachPool<C>(client: C, pool: pg.Pool): C {
  Object.defineProperty(client, POOL, { value: pool })
  return client
}

/**
 * `SELECT 1` on the pool under a client (attachPool): what readiness asks. Not through Prisma,
 * whose first query loads and compiles its query compiler (WebAssembly, 3.4 MB) — a readiness
 * probe made every service pay that at start, in time (the first /readyz ran past its deadline
 * on a busy machine) and in memory, even where no request needed Prisma.
 */
export async function pingDatabase(client: unknown): Promise<void> {
  const pool = (client as { [POOL]?: pg.Pool })[POOL]
  if (!pool) throw new Error('pingDatabase: no pool attached to this client (attachPool)')
  await pool.query('SELECT 1')
}

/**
 * The database's readiness check (http.ts ReadinessCheck): `SELECT 1` (pingDatabase), and, for a
 * ping past its deadline, whether the server meanwhile answered a query the pool sent after the
 * check began. Then it is busy (the ping queued behind other work, or a connection was still
 * opening), not frozen or gone: a frozen server cannot answer what was sent after it stopped.
 * Without other traffic a slow ping still fails: nothing shows the server is alive.
 */
export function databaseReadiness(client: unknown): {
  check: () => Promise<void>
  progress: () => () => boolean
} {
  const pool = (client as { [POOL]?: pg.Pool })[POOL]
  const progress = (pool as { [PROGRESS]?: QueryProgress } | undefined)?.[PROGRESS]
  return {
    check: () => pingDatabase(client),
    progress: () => {
      if (!progress) return () => false
      const before = progress.sent
      return () => progress.answered > before
    },
  }
}

/**
 * A statement run as a named prepared statement on whichever connection the pool hands out: the
 * reads every request makes, where parsing and planning cost Postgres more than running them.
 * `prepared` returns the function that runs it. Each connection prepares it once under its own name
 * (random, so also unique across processes and in the embedded Postgres, which serves every
 * connection from one session, where a shared name would collide).
 */
export function preparedStatement<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  label: string,
  text: string,
): (values: unknown[]) => Promise<R[]> {
  const names = new WeakMap<pg.PoolClient, string>()
  return async (values) => {
    const client = await pool.connect()
    try {
      let name = names.get(client)
      if (!name) {
        name = `${label}_${randomBytes(6).toString('hex')}`
        names.set(client, name)
      }
      return (await client.query<R>({ name, text, values })).rows
    } finally {
      client.release()
    }
  }
}

/** Quote a Postgres identifier (schema names come from config, but never trust a string into SQL). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/**
 * Deadlines for operator commands (the CLIs): an operator waits for an answer rather than gets
 * a 503, and a long publish or sweep is not cancelled after a second.
 */
export const OPERATOR_DEADLINES: PoolDeadlines = { connectTimeoutMs: 30_000, queryTimeoutMs: 0 }

/**
 * The database options of an app's base config: the service's deadlines from its config, or an
 * operator command's (`operator`: a small pool, OPERATOR_DEADLINES).
 */
export function databaseOptions(
  config: {
    DATABASE_URL: string
    DATABASE_SCHEMA: string
    DATABASE_POOL_SIZE: number
    DATABASE_CONNECT_TIMEOUT_MS: number
    DATABASE_QUERY_TIMEOUT_MS: number
  },
  operator?: { poolSize: number },
): DatabaseOptions {
  return {
    url: config.DATABASE_URL,
    schema: config.DATABASE_SCHEMA,
    poolSize: operator?.poolSize ?? config.DATABASE_POOL_SIZE,
    deadlines: operator
      ? OPERATOR_DEADLINES
      : {
          connectTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
          queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
          firstConnectTimeoutMs: ESTABLISH_TIMEOUT_MS,
        },
  }
}
