import { createPrismaClient, type DatabaseOptions } from '@quartet/core/db'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

export function createDb(options: DatabaseOptions): Db {
  return createPrismaClient(PrismaClient, options)
}
