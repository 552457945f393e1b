import { createPrismaClient, type DatabaseOptions, type RawAccess, rawAccessOf } from '@quartet/core/db'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

/** The app's Prisma client on a pg pool with core's deadlines, bound to its schema. `$disconnect()` ends the pool. */
export function createDb(options: DatabaseOptions): Db {
  return createPrismaClient(PrismaClient, options)
}

/**
 * The pg pool under a Db, and its schema. The repositories' hand-written SQL runs on it: the
 * hot read (GET /api/v1/key) as one prepared statement, because Prisma's raw-query path
 * costs more than the query itself there; the ledger batch as one plain transaction.
 */
export function rawOf(db: Db): RawAccess {
  const access = rawAccessOf(db)
  if (!access) throw new Error('this Db was not made by createDb')
  return access
}
