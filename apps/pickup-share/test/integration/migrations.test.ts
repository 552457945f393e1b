import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { quoteIdent } from '@quartet/core/db'
import { applyMigrations } from '@quartet/core/migrate'
import { testDatabaseUrl, uniqueName } from '@quartet/core/testing'

// Data migrations: a schema migrated up to just before one, given old rows, then migrated on.
const MIGRATIONS = path.join(__dirname, '../../prisma/migrations')

async function migratedUntil(before: string, rows: (client: pg.Client) => Promise<void>) {
  const url = testDatabaseUrl()
  const schema = uniqueName('share_mig')
  const older = mkdtempSync(path.join(os.tmpdir(), 'pickup-migrations-'))
  for (const name of readdirSync(MIGRATIONS))
    if (name < before) cpSync(path.join(MIGRATIONS, name), path.join(older, name), { recursive: true })
  await applyMigrations({ connectionString: url, schema, migrationsDir: older })
  rmSync(older, { recursive: true, force: true })
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`SET search_path TO ${quoteIdent(schema)}`)
  await rows(client)
  await applyMigrations({ connectionString: url, schema, migrationsDir: MIGRATIONS })
  return {
    client,
    drop: async () => {
      await client.query(`DROP SCHEMA ${quoteIdent(schema)} CASCADE`)
      await client.end()
    },
  }
}

const site = async (client: pg.Client) =>
  (await client.query(`SELECT value FROM setting WHERE key = 'site'`)).rows[0].value

describe('migration 20261124000000_guessing_defaults', () => {
  it.each([
    [
      'the old defaults',
      { codeLength: 8, takeFailuresGlobal: 1000 },
      { codeLength: 12, takeFailuresGlobal: 600 },
    ],
    [
      'values an admin chose',
      { codeLength: 10, takeFailuresGlobal: 50 },
      { codeLength: 10, takeFailuresGlobal: 50 },
    ],
  ])(
    'when the stored settings hold %s (%j), then the new defaults replace only old defaults',
    async (_what, stored, expected) => {
      const db = await migratedUntil('20261124000000', (client) =>
        client
          .query(`INSERT INTO setting (key, value, updated_at) VALUES ('site', $1, now())`, [
            JSON.stringify({ ...stored, maxExpireDays: 30 }),
          ])
          .then(() => undefined),
      )
      try {
        expect(await site(db.client)).toEqual({ ...expected, maxExpireDays: 30 })
      } finally {
        await db.drop()
      }
    },
  )
})
