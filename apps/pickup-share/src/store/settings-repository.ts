import type { Prisma } from '../generated/prisma/client.ts'
import { type Db, rawOf } from './db.ts'

/** Named JSON settings in the `setting` table. */
export class SettingsRepository {
  private readonly raw

  constructor(private readonly db: Db) {
    const raw = rawOf(db)
    this.raw = raw && {
      pool: raw.pool,
      // A prepared statement: planned once per connection.
      query: {
        name: 'setting-value',
        text: `SELECT value::text AS value FROM ${raw.schema}.setting WHERE key = $1`,
      },
    }
  }

  /** The stored JSON as text (Postgres's jsonb text form), null when there is none. */
  async getText(key: string): Promise<string | null> {
    if (this.raw) {
      const { rows } = await this.raw.pool.query<{ value: string }>({ ...this.raw.query, values: [key] })
      return rows[0]?.value ?? null
    }
    const row = await this.db.setting.findUnique({ where: { key } })
    return row ? JSON.stringify(row.value) : null
  }

  async put(key: string, value: Record<string, unknown>): Promise<void> {
    const json = value as Prisma.InputJsonValue
    await this.db.setting.upsert({ where: { key }, create: { key, value: json }, update: { value: json } })
  }
}
