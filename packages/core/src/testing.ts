import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import { Writable } from 'node:stream'
import type { Express } from 'express'
import { Redis } from 'ioredis'
import pg from 'pg'
import { quoteIdent } from './db.ts'
import { createKeyValueStore, type KeyValueStore } from './kv.ts'
import { createLogger, type Logger } from './log.ts'
import { applyMigrations } from './migrate.ts'

/**
 * Test helpers. Data is isolated by making it unique: each test file gets its own Postgres schema
 * (migrated, dropped afterwards) and its own Redis key prefix, so files run in parallel against one
 * server and nothing is truncated under another test's feet.
 */

export function testDatabaseUrl(): string {
  const url = process.env.DATABASE_URL
  if (!url)
    throw new Error(
      'DATABASE_URL is not set: run tests through jest (its global setup starts an embedded Postgres)',
    )
  return url
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.env.JEST_WORKER_ID ?? '0'}_${randomBytes(5).toString('hex')}`
}

export interface TestDatabase {
  url: string
  schema: string
  /** Run raw SQL in the test schema. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>
  drop(): Promise<void>
}

/** A fresh schema with the app's migrations applied. Call `drop()` in afterAll. */
export async function createTestDatabase(options: {
  migrationsDir: string
  prefix?: string
}): Promise<TestDatabase> {
  const url = testDatabaseUrl()
  const schema = uniqueName(options.prefix ?? 'test')
  await applyMigrations({ connectionString: url, schema, migrationsDir: options.migrationsDir })
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  pool.on('error', () => {})
  return {
    url,
    schema,
    async query(sql, params) {
      const client = await pool.connect()
      try {
        await client.query(`SET search_path TO ${quoteIdent(schema)}`)
        return await client.query(sql, params)
      } finally {
        client.release()
      }
    },
    async drop() {
      await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`)
      await pool.end()
    },
  }
}

/**
 * Deletes every Redis key under `prefix` (a test's unique kv prefix). A store's client prefixes
 * the keys of its commands but not KEYS patterns, so this uses a plain client of its own.
 */
export async function deleteRedisKeys(redisUrl: string, prefix: string): Promise<void> {
  const plain = new Redis(redisUrl)
  try {
    const keys = await plain.keys(`${prefix}*`)
    if (keys.length) await plain.del(...keys)
  } finally {
    await plain.quit()
  }
}

/** Redis under a unique key prefix when REDIS_URL is set, else the in-memory store. */
export function createTestKv(): KeyValueStore {
  return createKeyValueStore({ redisUrl: process.env.REDIS_URL, keyPrefix: `${uniqueName('test')}:` })
}

export interface CapturedLogger {
  logger: Logger
  /** Parsed log lines written so far. */
  lines: Array<Record<string, unknown>>
}

/** A real pino logger whose lines are kept in memory, for tests that assert on logging. */
export function captureLogger(name = 'test'): CapturedLogger {
  const lines: Array<Record<string, unknown>> = []
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) lines.push(JSON.parse(line))
      done()
    },
  })
  return { logger: createLogger({ name, level: 'debug', destination }), lines }
}

export function silentLogger(): Logger {
  return createLogger({ name: 'test', level: 'silent' })
}

export interface RunningServer {
  url: string
  port: number
  server: Server
  close(): Promise<void>
}

/** Listen on a free loopback port, in-process. */
export async function startTestServer(app: Express): Promise<RunningServer> {
  const server = app.listen(0, '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

export interface TestDeps<D extends { $disconnect(): Promise<void> }> {
  readonly database: TestDatabase
  readonly db: D
  readonly kv: KeyValueStore
}

/**
 * Registers beforeAll/afterAll that give a test file a migrated schema of its own, the app's
 * Prisma client on it, and a kv store; everything is closed and dropped afterwards.
 */
export function useTestDeps<D extends { $disconnect(): Promise<void> }>(options: {
  migrationsDir: string
  prefix: string
  createDb: (o: { url: string; schema: string; poolSize: number }) => D
}): TestDeps<D> {
  let state: { database: TestDatabase; db: D; kv: KeyValueStore } | undefined
  beforeAll(async () => {
    const database = await createTestDatabase({
      migrationsDir: options.migrationsDir,
      prefix: options.prefix,
    })
    state = {
      database,
      db: options.createDb({ url: database.url, schema: database.schema, poolSize: 4 }),
      kv: createTestKv(),
    }
  })
  afterAll(async () => {
    if (!state) return
    await state.db.$disconnect()
    await state.kv.close()
    await state.database.drop()
  })
  const get = () => {
    if (!state) throw new Error('test dependencies are only ready inside tests (after beforeAll)')
    return state
  }
  return {
    get database() {
      return get().database
    },
    get db() {
      return get().db
    },
    get kv() {
      return get().kv
    },
  }
}

/**
 * The operational surface every service must keep: /healthz, /readyz with its named checks,
 * /metrics, an echoed request id, and a JSON 404 in the service's envelope. Each app's skeleton
 * test calls this, so no app can drop one of them unnoticed.
 */
export async function expectOperationalEndpoints(
  app: Express,
  options: { checks: string[]; notFoundBody: (requestId: string) => unknown },
): Promise<void> {
  const { default: request } = await import('supertest')
  await request(app).get('/healthz').expect(200, { status: 'ok' })
  const ready = await request(app).get('/readyz').expect(200)
  expect(ready.body).toEqual({
    status: 'ok',
    checks: Object.fromEntries(options.checks.map((c) => [c, 'ok'])),
  })
  const metrics = await request(app).get('/metrics').expect(200)
  expect(metrics.text).toContain('http_requests_total')
  const missing = await request(app).get('/no/such/route').set('X-Request-Id', 'skeleton-check-1').expect(404)
  expect(missing.headers['x-request-id']).toBe('skeleton-check-1')
  expect(missing.body).toEqual(options.notFoundBody('skeleton-check-1'))
}
