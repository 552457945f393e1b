import { createPrismaClient } from '@quartet/core/db'
import { PrismaClient } from '../generated/prisma/client.ts'

export type Db = PrismaClient

export function createDb(options: { url: string; schema: string; poolSize: number }): Db {
  return createPrismaClient(PrismaClient, options)
}
