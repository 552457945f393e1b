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
  raw.set(db, { pool, schema: quoteIdent(options.schema) })
  return db
}

const raw = new WeakMap<object, RawAccess>()

export interface RawAccess {
  pool: pg.Pool
  /** The app's schema, quoted for SQL text. */
  schema: string
}

/**
 * The pg pool under a Db, and its schema. The repositories' hand-written SQL runs on it: the
 * hot read (GET /api/v1/key) as one prepared statement, because Prisma's raw-query path
 * costs more than the query itself there; the ledger batch as one plain transaction.
 */
export function rawOf(db: Db): RawAccess {
  const access = raw.get(db)
  if (!access) throw new Error('this Db was not made by createDb')
  return access
}
