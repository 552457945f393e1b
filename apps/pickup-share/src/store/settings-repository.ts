import type { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'

/** Named JSON settings in the `setting` table. */
export class SettingsRepository {
  constructor(private readonly db: Db) {}

  async get(key: string): Promise<unknown> {
    const row = await this.db.setting.findUnique({ where: { key } })
    return row?.value ?? null
  }

  async put(key: string, value: Record<string, unknown>): Promise<void> {
    const json = value as Prisma.InputJsonValue
    await this.db.setting.upsert({ where: { key }, create: { key, value: json }, update: { value: json } })
  }
}
