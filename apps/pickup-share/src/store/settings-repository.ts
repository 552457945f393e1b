import { preparedStatement } from '@quartet/core/db'
import type { Prisma } from '../generated/prisma/client.ts'
import type { SettingsPort } from '../domain/ports.ts'
import { type Db, rawOf } from './db.ts'

/** Named JSON settings in the `setting` table. */
export class SettingsRepository implements SettingsPort {
  /** The settings read as a prepared statement on the pool (see rawOf), when there is one. */
  private readonly readValue: ((values: unknown[]) => Promise<Array<{ value: string }>>) | undefined

  constructor(private readonly db: Db) {
    const raw = rawOf(db)
    this.readValue =
      raw &&
      preparedStatement<{ value: string }>(
        raw.pool,
        'pickup_share_setting',
        `SELECT value::text AS value FROM ${raw.schema}.setting WHERE key = $1`,
      )
  }

  /** The stored JSON as text (Postgres's jsonb text form), null when there is none. */
  async getText(key: string): Promise<string | null> {
    if (this.readValue) return (await this.readValue([key]))[0]?.value ?? null
    const row = await this.db.setting.findUnique({ where: { key } })
    return row ? JSON.stringify(row.value) : null
  }

  async put(key: string, value: Record<string, unknown>): Promise<void> {
    const json = value as Prisma.InputJsonValue
    await this.db.setting.upsert({ where: { key }, create: { key, value: json }, update: { value: json } })
  }
}
