import { createHash, randomUUID } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { quoteIdent } from './db.ts'

/**
 * Applies Prisma-format migrations (`prisma/migrations/<timestamp>_<name>/migration.sql`) and keeps
 * Prisma's own `_prisma_migrations` bookkeeping, so `prisma migrate deploy` run elsewhere sees the
 * same history. We need our own applier because Prisma's schema engine cannot be downloaded here.
 *
 * - Each migration runs in its own transaction, holding a transaction-scoped advisory lock keyed
 *   by the schema: two replicas starting together apply each migration exactly once (the second
 *   waits, then sees the row and skips).
 * - A migration already applied whose file has changed since (checksum = sha256 hex of the file,
 *   as Prisma computes it) stops start-up with a clear error, as does a failed earlier attempt.
 */

export interface Migration {
  name: string
  sql: string
  checksum: string
}

export interface MigrateOptions {
  connectionString: string
  schema: string
  migrationsDir: string
  log?: (message: string, fields?: Record<string, unknown>) => void
}

export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'MigrationError'
  }
}

/** Prisma's advisory lock id for migrations, paired with the schema so schemas don't block each other. */
const LOCK_CLASS = 72707369

const BOOKKEEPING_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum"            VARCHAR(64) NOT NULL,
  "finished_at"         TIMESTAMPTZ,
  "migration_name"      VARCHAR(255) NOT NULL,
  "logs"                TEXT,
  "rolled_back_at"      TIMESTAMPTZ,
  "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`

export function readMigrations(migrationsDir: string): Migration[] {
  if (!existsSync(migrationsDir))
    throw new MigrationError(`migrations folder ${migrationsDir} does not exist`)
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(migrationsDir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const bytes = readFileSync(path.join(migrationsDir, name, 'migration.sql'))
      return { name, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') }
    })
}

interface AppliedRow {
  migration_name: string
  checksum: string
  finished_at: Date | null
  rolled_back_at: Date | null
}

export async function applyMigrations(
  options: MigrateOptions,
): Promise<{ applied: string[]; total: number }> {
  const migrations = readMigrations(options.migrationsDir)
  const log = options.log ?? (() => {})
  const schema = quoteIdent(options.schema)
  const client = new pg.Client({
    connectionString: options.connectionString,
    connectionTimeoutMillis: 10_000,
  })
  // A connection the server drops (a restart, a reset) rejects the query under way; without a
  // listener the client's 'error' event would also end the process as an unhandled error.
  client.on('error', () => {})
  await client.connect()
  const applied: string[] = []
  try {
    const inLockedTransaction = async <T>(work: () => Promise<T>): Promise<T> => {
      await client.query('BEGIN')
      try {
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, options.schema])
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`)
        await client.query(`SET LOCAL search_path TO ${schema}`)
        const result = await work()
        await client.query('COMMIT')
        return result
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        throw err
      }
    }

    const rows = await inLockedTransaction(async () => {
      await client.query(BOOKKEEPING_TABLE)
      const res = await client.query<AppliedRow>(
        'SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"',
      )
      return res.rows
    })
    verifyHistory(migrations, rows)

    for (const migration of migrations) {
      const done = await inLockedTransaction(async () => {
        const existing = await client.query<AppliedRow>(
          `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"
           WHERE migration_name = $1 AND rolled_back_at IS NULL`,
          [migration.name],
        )
        if (existing.rows.length > 0) {
          verifyHistory([migration], existing.rows)
          return false
        }
        const id = randomUUID()
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at, applied_steps_count)
           VALUES ($1, $2, $3, now(), 0)`,
          [id, migration.checksum, migration.name],
        )
        try {
          await client.query(migration.sql)
        } catch (err) {
          throw new MigrationError(
            `migration ${migration.name} failed in schema ${options.schema}: ${(err as Error).message}`,
            { cause: err },
          )
        }
        await client.query(
          `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
          [id],
        )
        return true
      })
      if (done) {
        applied.push(migration.name)
        log('applied migration', { migration: migration.name, schema: options.schema })
      }
    }
  } finally {
    await client.end().catch(() => {})
  }
  return { applied, total: migrations.length }
}

function verifyHistory(migrations: Migration[], rows: AppliedRow[]): void {
  const byName = new Map(migrations.map((m) => [m.name, m]))
  for (const row of rows) {
    if (row.rolled_back_at) continue
    if (!row.finished_at) {
      throw new MigrationError(
        `migration ${row.migration_name} started but never finished; fix the schema by hand, then mark it ` +
          `rolled back (UPDATE "_prisma_migrations" SET rolled_back_at = now() WHERE migration_name = '${row.migration_name}')`,
      )
    }
    const file = byName.get(row.migration_name)
    if (file && file.checksum !== row.checksum) {
      throw new MigrationError(
        `migration ${row.migration_name} was modified after it was applied ` +
          `(applied checksum ${row.checksum}, file checksum ${file.checksum}); ` +
          'never edit an applied migration: add a new one',
      )
    }
  }
}

export interface MigrationState {
  name: string
  checksum: string
  state: 'applied' | 'pending' | 'modified' | 'failed'
  finished_at: string | null
}

/** What `cli migrate:status` prints: every migration file and whether the database has it. */
export async function migrationStatus(options: Omit<MigrateOptions, 'log'>): Promise<MigrationState[]> {
  const migrations = readMigrations(options.migrationsDir)
  const client = new pg.Client({
    connectionString: options.connectionString,
    connectionTimeoutMillis: 10_000,
  })
  // A connection the server drops (a restart, a reset) rejects the query under way; without a
  // listener the client's 'error' event would also end the process as an unhandled error.
  client.on('error', () => {})
  await client.connect()
  try {
    const exists = await client.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = '_prisma_migrations'`,
      [options.schema],
    )
    const rows =
      exists.rowCount === 0
        ? []
        : (
            await client.query<AppliedRow>(
              `SELECT migration_name, checksum, finished_at, rolled_back_at
               FROM ${quoteIdent(options.schema)}."_prisma_migrations" WHERE rolled_back_at IS NULL`,
            )
          ).rows
    const byName = new Map(rows.map((r) => [r.migration_name, r]))
    return migrations.map((m) => {
      const row = byName.get(m.name)
      const state = !row
        ? 'pending'
        : !row.finished_at
          ? 'failed'
          : row.checksum !== m.checksum
            ? 'modified'
            : 'applied'
      return {
        name: m.name,
        checksum: m.checksum,
        state,
        finished_at: row?.finished_at?.toISOString() ?? null,
      }
    })
  } finally {
    await client.end().catch(() => {})
  }
}
