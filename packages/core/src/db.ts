import { PrismaPg } from '@prisma/adapter-pg'
import pg from 'pg'

export interface DatabaseOptions {
  url: string
  /** The Postgres schema this app owns (`key_info`, …). */
  schema: string
  poolSize: number
}

/**
 * Builds an app's generated PrismaClient over `@prisma/adapter-pg` (Prisma 7: no Rust engine at
 * run time) bound to the app's own schema. Generic over the client class so core never imports an
 * app's generated code.
 */
export function createPrismaClient<C>(
  PrismaClient: new (options: { adapter: PrismaPg }) => C,
  options: DatabaseOptions,
): C {
  const adapter = new PrismaPg(
    { connectionString: options.url, max: options.poolSize, connectionTimeoutMillis: 10_000 },
    { schema: options.schema },
  )
  return new PrismaClient({ adapter })
}

/** A plain pg pool for the migration applier, readiness probes and raw SQL in tests. */
export function createPgPool(url: string, max = 2): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 })
  // An idle client losing its server must not crash the process; the next checkout reconnects.
  pool.on('error', () => {})
  return pool
}

/** Quote a Postgres identifier (schema names come from config, but never trust a string into SQL). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`
}

/** The database options of an app's base config, with an optional smaller pool (CLI commands). */
export function databaseOptions(
  config: { DATABASE_URL: string; DATABASE_SCHEMA: string; DATABASE_POOL_SIZE: number },
  poolSize = config.DATABASE_POOL_SIZE,
): DatabaseOptions {
  return { url: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, poolSize }
}
