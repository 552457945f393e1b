import { PrismaPg } from '@prisma/adapter-pg'
import { attachPool, createPgPool, type DatabaseOptions, quoteIdent } from '@quartet/core/db'
import type pg from 'pg'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

/**
 * The app's Prisma client over `@prisma/adapter-pg`, bound to its schema, on a pg pool of our own
 * (core's, with its deadlines; see rawOf). `$disconnect()` ends the pool.
 */
export function createDb(options: DatabaseOptions): Db {
  const pool = createPgPool(options.url, { max: options.poolSize, deadlines: options.deadlines })
  const db = attachPool(
    new PrismaClient({
      adapter: new PrismaPg(pool, { schema: options.schema, disposeExternalPool: true }),
      errorFormat: 'minimal', // see createPrismaClient in core
    }),
    pool,
  )
  // A property, not a WeakMap entry, so that a wrapper of the client (a test's Proxy) still has it.
  Object.defineProperty(db, RAW, { value: { pool, schema: quoteIdent(options.schema) } satisfies RawAccess })
  return db
}

const RAW = Symbol('dns-manager.raw')

export interface RawAccess {
  pool: pg.Pool
  /** The app's schema, quoted for SQL text. */
  schema: string
}

/**
 * The pg pool under a Db, and its schema. The reads every authenticated request makes (the
 * credential lookup, the quota count, the subdomain and record pages) run on it as plain SQL:
 * Prisma's query path (planning, the interpreter, mapping) cost several times the query there,
 * as key-info found for its hot read.
 */
export function rawOf(db: Db): RawAccess {
  const access = (db as unknown as { [RAW]?: RawAccess })[RAW]
  if (!access) throw new Error('this Db was not made by createDb')
  return access
}
