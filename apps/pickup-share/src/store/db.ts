import { createPrismaClient, type DatabaseOptions, type RawAccess, rawAccessOf } from '@quartet/core/db'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

/** The app's Prisma client on a pg pool with core's deadlines, bound to its schema. `$disconnect()` ends the pool. */
export function createDb(options: DatabaseOptions): Db {
  return createPrismaClient(PrismaClient, options)
}

/**
 * The pg pool under a Db made by createDb, and its schema, for the one read every page load
 * makes (the site settings, GET /api/site): Prisma's query path allocates several times what
 * the query itself needs there, and under load that garbage is what the heap grew by.
 */
export function rawOf(db: Db): RawAccess | undefined {
  return rawAccessOf(db)
}
