import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { quoteIdent } from '../src/db.ts'
import { applyMigrations, MigrationError } from '../src/migrate.ts'
import { testDatabaseUrl, uniqueName } from '../src/testing.ts'

const INIT = '20250101000000_init'
const ADD_TAGS = '20250102000000_add_tags'

const INIT_SQL = `CREATE TABLE "share" (
  "id" SERIAL PRIMARY KEY,
  "code" TEXT NOT NULL UNIQUE
);
`
const ADD_TAGS_SQL = `CREATE TABLE "tag" ("id" SERIAL PRIMARY KEY, "share_id" INTEGER NOT NULL REFERENCES "share"("id"), "name" TEXT NOT NULL);
CREATE INDEX "tag_share_id_idx" ON "tag"("share_id");
`

interface MigrationRow {
  migration_name: string
  checksum: string
  finished_at: Date | null
  rolled_back_at: Date | null
  applied_steps_count: number
}

describe('applyMigrations', () => {
  const url = testDatabaseUrl()
  let admin: pg.Client
  let dirs: string[] = []
  let schemas: string[] = []

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: url })
    await admin.connect()
  })

  afterEach(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`)
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    schemas = []
    dirs = []
  })

  afterAll(async () => {
    await admin.end()
  })

  function newSchema(): string {
    const schema = uniqueName('migtest')
    schemas.push(schema)
    return schema
  }

  function migrationsFolder(migrations: Record<string, string>): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'quartet-migrations-'))
    dirs.push(dir)
    for (const [name, sql] of Object.entries(migrations)) writeMigration(dir, name, sql)
    return dir
  }

  function writeMigration(dir: string, name: string, sql: string): void {
    mkdirSync(path.join(dir, name), { recursive: true })
    writeFileSync(path.join(dir, name, 'migration.sql'), sql)
  }

  async function rows(schema: string): Promise<MigrationRow[]> {
    const res = await admin.query<MigrationRow>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at, applied_steps_count
       FROM ${quoteIdent(schema)}."_prisma_migrations" ORDER BY migration_name`,
    )
    return res.rows
  }

  async function tablesIn(schema: string): Promise<string[]> {
    const res = await admin.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
      [schema],
    )
    return res.rows.map((r) => r.table_name)
  }

  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

  it('when the schema is new, then every migration is applied in order and recorded as Prisma does', async () => {
    const schema = newSchema()
    const migrationsDir = migrationsFolder({ [ADD_TAGS]: ADD_TAGS_SQL, [INIT]: INIT_SQL })
    const logged: string[] = []

    const result = await applyMigrations({
      connectionString: url,
      schema,
      migrationsDir,
      log: (_message, fields) => logged.push(String(fields?.migration)),
    })

    expect(result).toEqual({ applied: [INIT, ADD_TAGS], total: 2 })
    expect(logged).toEqual([INIT, ADD_TAGS])
    expect(await tablesIn(schema)).toEqual(['_prisma_migrations', 'share', 'tag'])
    const recorded = await rows(schema)
    expect(recorded.map((r) => r.migration_name)).toEqual([INIT, ADD_TAGS])
    expect(recorded[0]!.checksum).toBe(sha256(INIT_SQL))
    expect(recorded[1]!.checksum).toBe(sha256(ADD_TAGS_SQL))
    for (const row of recorded) {
      expect(row.finished_at).toBeInstanceOf(Date)
      expect(row.rolled_back_at).toBeNull()
      expect(row.applied_steps_count).toBe(1)
    }
  })

  it('when run again with nothing new, then it applies nothing and records nothing more', async () => {
    const schema = newSchema()
    const migrationsDir = migrationsFolder({ [INIT]: INIT_SQL, [ADD_TAGS]: ADD_TAGS_SQL })
    await applyMigrations({ connectionString: url, schema, migrationsDir })
    const before = await rows(schema)

    const again = await applyMigrations({ connectionString: url, schema, migrationsDir })

    expect(again).toEqual({ applied: [], total: 2 })
    expect(await rows(schema)).toEqual(before)
  })

  it('when a new migration is added later, then only that one is applied', async () => {
    const schema = newSchema()
    const migrationsDir = migrationsFolder({ [INIT]: INIT_SQL })
    await applyMigrations({ connectionString: url, schema, migrationsDir })

    writeMigration(migrationsDir, ADD_TAGS, ADD_TAGS_SQL)
    const result = await applyMigrations({ connectionString: url, schema, migrationsDir })

    expect(result.applied).toEqual([ADD_TAGS])
    expect((await rows(schema)).map((r) => r.migration_name)).toEqual([INIT, ADD_TAGS])
  })

  it('when an applied migration file has changed, then it refuses with a MigrationError and applies nothing', async () => {
    const schema = newSchema()
    const migrationsDir = migrationsFolder({ [INIT]: INIT_SQL })
    await applyMigrations({ connectionString: url, schema, migrationsDir })
    writeMigration(migrationsDir, INIT, `${INIT_SQL}ALTER TABLE "share" ADD COLUMN "sneaky" TEXT;\n`)
    writeMigration(migrationsDir, ADD_TAGS, ADD_TAGS_SQL)

    const attempt = applyMigrations({ connectionString: url, schema, migrationsDir })

    await expect(attempt).rejects.toBeInstanceOf(MigrationError)
    await expect(attempt).rejects.toThrow(new RegExp(`migration ${INIT} was modified after it was applied`))
    await expect(attempt).rejects.toThrow(sha256(INIT_SQL))
    expect(await tablesIn(schema)).toEqual(['_prisma_migrations', 'share'])
    expect((await rows(schema)).map((r) => r.migration_name)).toEqual([INIT])
  })

  it('when a migration fails half-way, then none of its statements or its row remain, and a fixed file applies', async () => {
    const schema = newSchema()
    const broken = `CREATE TABLE "tag" ("id" SERIAL PRIMARY KEY);\nINSERT INTO "no_such_table" VALUES (1);\n`
    const migrationsDir = migrationsFolder({ [INIT]: INIT_SQL, [ADD_TAGS]: broken })

    const attempt = applyMigrations({ connectionString: url, schema, migrationsDir })

    await expect(attempt).rejects.toBeInstanceOf(MigrationError)
    await expect(attempt).rejects.toThrow(
      new RegExp(`migration ${ADD_TAGS} failed in schema ${schema}: .*no_such_table`),
    )
    expect(await tablesIn(schema)).toEqual(['_prisma_migrations', 'share'])
    expect((await rows(schema)).map((r) => r.migration_name)).toEqual([INIT])

    writeMigration(migrationsDir, ADD_TAGS, ADD_TAGS_SQL)
    const retry = await applyMigrations({ connectionString: url, schema, migrationsDir })

    expect(retry.applied).toEqual([ADD_TAGS])
    expect(await tablesIn(schema)).toEqual(['_prisma_migrations', 'share', 'tag'])
  })

  it('when three appliers start together on a new schema, then each migration is applied exactly once', async () => {
    const schema = newSchema()
    // A slow first migration widens the window in which the appliers overlap.
    const migrationsDir = migrationsFolder({
      [INIT]: `SELECT pg_sleep(0.2);\n${INIT_SQL}`,
      [ADD_TAGS]: ADD_TAGS_SQL,
    })

    const results = await Promise.all(
      [1, 2, 3].map(() => applyMigrations({ connectionString: url, schema, migrationsDir })),
    )

    const applied = results.flatMap((r) => r.applied)
    expect([...applied].sort()).toEqual([INIT, ADD_TAGS])
    expect(new Set(applied).size).toBe(applied.length)
    const recorded = await rows(schema)
    expect(recorded.map((r) => r.migration_name)).toEqual([INIT, ADD_TAGS])
    expect(recorded.every((r) => r.finished_at !== null && r.applied_steps_count === 1)).toBe(true)
  })

  it('when the server drops the connection during a migration, then applying rejects and the process lives on', async () => {
    const schema = newSchema()
    const marker = uniqueName('dropped')
    const migrationsDir = migrationsFolder({ [INIT]: `SELECT pg_sleep(30) AS ${marker};\n${INIT_SQL}` })
    const uncaught: unknown[] = []
    const onUncaught = (err: unknown) => uncaught.push(err)
    process.on('uncaughtException', onUncaught)
    try {
      const attempt = applyMigrations({ connectionString: url, schema, migrationsDir })
      attempt.catch(() => {})
      // Wait for the migration's query, then end its backend as a server restart would.
      for (let i = 0; i < 200; i++) {
        const killed = await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE $1 AND pid <> pg_backend_pid()`,
          [`%AS ${marker}%`],
        )
        if (killed.rowCount) break
        await new Promise((r) => setTimeout(r, 50))
      }

      await expect(attempt).rejects.toThrow(/terminat|Connection/i)
      await new Promise((r) => setImmediate(r))
      expect(uncaught).toEqual([])
    } finally {
      process.off('uncaughtException', onUncaught)
    }
  })

  it('when the migrations folder does not exist, then it says so', async () => {
    const missing = path.join(tmpdir(), 'quartet-no-such-migrations')

    await expect(
      applyMigrations({ connectionString: url, schema: newSchema(), migrationsDir: missing }),
    ).rejects.toThrow(`migrations folder ${missing} does not exist`)
  })
})
