import { createPrismaClient, type DatabaseOptions, type RawAccess, rawAccessOf } from '@quartet/core/db'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

/** The app's Prisma client on a pg pool with core's deadlines, bound to its schema. `$disconnect()` ends the pool. */
export function createDb(options: DatabaseOptions): Db {
  return createPrismaClient(PrismaClient, options)
}

/**
 * The pg pool under a Db, and its schema. The reads every authenticated request makes (the
 * credential lookup, the quota count, the subdomain and record pages) run on it as plain SQL:
 * Prisma's query path (planning, the interpreter, mapping) cost several times the query there,
 * as key-info found for its hot read.
 */
export function rawOf(db: Db): RawAccess {
  const access = rawAccessOf(db)
  if (!access) throw new Error('this Db was not made by createDb')
  return access
}
