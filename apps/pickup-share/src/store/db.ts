import { PrismaPg } from '@prisma/adapter-pg'
import { attachPool, createPgPool, type DatabaseOptions, quoteIdent } from '@quartet/core/db'
import type pg from 'pg'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

/**
 * The app's Prisma client over `@prisma/adapter-pg`, bound to its schema, on a pg pool with
 * core's deadlines (as core's createPrismaClient makes it), with that pool and schema kept for
 * rawOf. `$disconnect()` ends the pool.
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
 * The pg pool under a Db made by createDb, and its schema, for the one read every page load
 * makes (the site settings, GET /api/site): Prisma's query path allocates several times what
 * the query itself needs there, and under load that garbage is what the heap grew by.
 */
export function rawOf(db: Db): RawAccess | undefined {
  return raw.get(db)
}
