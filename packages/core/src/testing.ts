import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import net from 'node:net'
import { Writable } from 'node:stream'
import type { Express } from 'express'
import { Redis } from 'ioredis'
import pg from 'pg'
import { type DatabaseOptions, EMBEDDED_DEADLINES, quoteIdent } from './db.ts'
import { createKeyValueStore, type KeyValueStore } from './kv.ts'
import { createLogger, type Logger } from './log.ts'
import { metricsRegistryOf, requestListener, serverFor } from './http.ts'
import supertest from 'supertest'
import { applyMigrations } from './migrate.ts'

export {
  describeWhen,
  type FileNeed,
  findProgram,
  itWhen,
  missingNeeds,
  type ProgramNeed,
  type TestNeeds,
} from './testing-needs.ts'

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

/**
 * supertest's `request`, for an app made by createHttpApp served as `serve` serves it: through its
 * request listener, so the answers asked before express (hot routes) answer here too. Anything
 * else (a URL, a server) goes to supertest as it is.
 */
export function request(app: Express | string | Server): supertest.Agent {
  return supertest(typeof app === 'function' ? requestListener(app) : app) as never
}
request.agent = (app: Express | string | Server, options?: Parameters<typeof supertest.agent>[1]) =>
  supertest.agent(typeof app === 'function' ? requestListener(app) : app, options)

/** Listen on a free loopback port, in-process, as `serve` does. */
export async function startTestServer(app: Express): Promise<RunningServer> {
  const server = serverFor(app).listen(0, '127.0.0.1')
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
 * The pool deadlines of a test file's own database client. Production's second (db.ts) is a
 * promise about a healthy server; in a loaded CI run (two Node versions' suites side by side on two
 * cores) a test process can stall for more than that between a query's answer arriving and its
 * socket being read, and the client's deadline, whose timer runs first, failed a test that had
 * nothing to do with deadlines ("Query read timeout", 2026-11-28). Deadlines themselves are tested
 * with pools of their own (core's deadlines.test.ts, the faults package).
 */
export const TEST_DEADLINES = { connectTimeoutMs: 10_000, queryTimeoutMs: 10_000 }

/**
 * Registers beforeAll/afterAll that give a test file a migrated schema of its own, the app's
 * Prisma client on it, and a kv store; everything is closed and dropped afterwards.
 */
export function useTestDeps<D extends { $disconnect(): Promise<void> }>(options: {
  migrationsDir: string
  prefix: string
  createDb: (o: DatabaseOptions) => D
}): TestDeps<D> {
  let state: { database: TestDatabase; db: D; kv: KeyValueStore } | undefined
  beforeAll(async () => {
    const database = await createTestDatabase({
      migrationsDir: options.migrationsDir,
      prefix: options.prefix,
    })
    state = {
      database,
      db: options.createDb({
        url: database.url,
        schema: database.schema,
        poolSize: 4,
        deadlines: process.env.QUARTET_TEST_EMBEDDED_PG ? EMBEDDED_DEADLINES : TEST_DEADLINES,
      }),
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
 * /metrics (only off the public port), an echoed request id, and a JSON 404 in the service's envelope. Each app's skeleton
 * test calls this, so no app can drop one of them unnoticed.
 */
/** What the scraper would read from `app`'s metrics port (serve's METRICS_PORT), read in-process. */
export async function metricsText(app: Express): Promise<string> {
  const registry = metricsRegistryOf(app)
  if (!registry) throw new Error('metricsText: the app was not made by createHttpApp')
  return registry.metrics()
}

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
  // Metrics are for the scraper's own port, not the public one.
  await request(app).get('/metrics').expect(404)
  expect(await metricsText(app)).toContain('http_requests_total')
  const missing = await request(app).get('/no/such/route').set('X-Request-Id', 'skeleton-check-1').expect(404)
  expect(missing.headers['x-request-id']).toBe('skeleton-check-1')
  expect(missing.body).toEqual(options.notFoundBody('skeleton-check-1'))
}

// ---------------------------------------------------------------------------------------------
// Dependencies a test owns, to stop and freeze: faults are tested with the real process stopped,
// and never the shared Postgres or Redis, which other test files use at the same time.
// ---------------------------------------------------------------------------------------------

/** A free TCP port on loopback (free when asked; a test binds it soon after). */
export async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const port = (server.address() as net.AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

export interface OwnRedis {
  url: string
  port: number
  /** SIGSTOP: the server keeps its connections and answers nothing, as a stalled host looks. */
  freeze(): void
  /** SIGCONT after freeze. */
  thaw(): void
  /** Stops the server (its data is gone: nothing is saved). */
  stop(): Promise<void>
  /** Starts it again on the same port, empty. */
  start(): Promise<void>
}

/** A `redis-server` of the test's own on a free port, stopped by `stop()` (call it in afterAll). */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    )
    for (let i = 0; i < 100; i++) {
      const up = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.end()
          resolve(true)
        })
        socket.on('error', () => resolve(false))
      })
      if (up) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    throw new Error(`redis-server did not start on port ${port}`)
  }
  await start()
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    start,
    stop: async () => {
      const running = child
      child = undefined
      if (!running || running.exitCode !== null) return
      running.kill('SIGCONT')
      const exited = new Promise((resolve) => running.once('exit', resolve))
      running.kill('SIGKILL')
      await exited
    },
  }
}

/**
 * A TCP server that accepts connections and never answers: what a frozen (SIGSTOPped) or
 * partitioned Postgres looks like to a client that connects after the freeze began.
 */
export async function startSilentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/**
 * Calls held until a test lets them go, for what a test must see while something is in flight
 * (a slow database read, a Redis answer on its way): `hold()` waits for the next `open()`.
 */
export function heldCalls(): { hold(): Promise<void>; open(): void } {
  let waiting: Array<() => void> = []
  return {
    hold: () => new Promise<void>((resolve) => waiting.push(resolve)),
    open() {
      const released = waiting
      waiting = []
      for (const release of released) release()
    },
  }
}
