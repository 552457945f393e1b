import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '../src/embedded-postgres.ts'

async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

// PGlite compiles Postgres from WebAssembly at each start: seconds alone, past jest's 30 s on a
// loaded CI machine (two starts in one case). What is tested is correctness, not speed.
jest.setTimeout(180_000)

describe('startEmbeddedPostgres', () => {
  let dataDir: string
  let running: EmbeddedPostgres | undefined

  beforeEach(() => {
    dataDir = path.join(mkdtempSync(path.join(tmpdir(), 'quartet-pglite-')), 'pglite')
  })

  afterEach(async () => {
    await running?.stop()
    running = undefined
    rmSync(path.dirname(dataDir), { recursive: true, force: true })
  })

  it('when stopped and started again on the same data directory, then the data is still there', async () => {
    const first = await startEmbeddedPostgres({ dataDir })
    running = first
    expect(first.port).toBeGreaterThan(0)
    expect(first.url).toBe(`postgresql://postgres:postgres@127.0.0.1:${first.port}/postgres`)
    await withClient(first.url, async (c) => {
      await c.query('CREATE SCHEMA survivor')
      await c.query('CREATE TABLE survivor.note (id SERIAL PRIMARY KEY, body TEXT NOT NULL)')
      await c.query(`INSERT INTO survivor.note (body) VALUES ('written before the restart'), ('and another')`)
    })
    await first.stop()
    running = undefined
    await expect(withClient(first.url, (c) => c.query('SELECT 1'))).rejects.toThrow(/ECONNREFUSED/)
    await expect(first.stop()).resolves.toBeUndefined()

    const second = await startEmbeddedPostgres({ dataDir })
    running = second
    const rows = await withClient(
      second.url,
      async (c) => (await c.query('SELECT id, body FROM survivor.note ORDER BY id')).rows,
    )

    expect(rows).toEqual([
      { id: 1, body: 'written before the restart' },
      { id: 2, body: 'and another' },
    ])
  })

  it('when several clients run transactions at once, then each commits or rolls back on its own', async () => {
    running = await startEmbeddedPostgres({})
    await withClient(running.url, (c) => c.query('CREATE TABLE counter (n INT NOT NULL)'))
    const url = running.url

    await Promise.all(
      [1, 2, 3].map((n) =>
        withClient(url, async (c) => {
          await c.query('BEGIN')
          await c.query('INSERT INTO counter (n) VALUES ($1)', [n])
          await c.query(n === 2 ? 'ROLLBACK' : 'COMMIT')
        }),
      ),
    )
    const final = await withClient(url, async (c) => (await c.query('SELECT n FROM counter ORDER BY n')).rows)

    expect(final).toEqual([{ n: 1 }, { n: 3 }])
  })
})

describe('startEmbeddedPostgres with many clients', () => {
  let running: EmbeddedPostgres

  beforeAll(async () => {
    running = await startEmbeddedPostgres({})
    await withClient(running.url, (c) => c.query('CREATE TABLE counter (id int PRIMARY KEY, n int NOT NULL)'))
    await withClient(running.url, (c) => c.query('INSERT INTO counter VALUES (1, 0)'))
  })

  afterAll(() => running.stop())

  it('when many pooled clients run parameterised queries at once, then every answer belongs to its own query', async () => {
    const pool = new pg.Pool({ connectionString: running.url, max: 12 })
    try {
      const answers = await Promise.all(
        Array.from({ length: 200 }, (_, i) =>
          pool.query<{ v: number; s: string }>('SELECT $1::int AS v, $2::text AS s', [i, `q${i}`]),
        ),
      )
      answers.forEach((res, i) => expect(res.rows).toEqual([{ v: i, s: `q${i}` }]))
    } finally {
      await pool.end()
    }
  })

  it('when clients run read-modify-write transactions at once, then no update is lost', async () => {
    const pool = new pg.Pool({ connectionString: running.url, max: 8 })
    try {
      await Promise.all(
        Array.from({ length: 40 }, async () => {
          const client = await pool.connect()
          try {
            await client.query('BEGIN')
            const { rows } = await client.query<{ n: number }>('SELECT n FROM counter WHERE id = 1')
            await new Promise((r) => setImmediate(r))
            await client.query('UPDATE counter SET n = $1 WHERE id = 1', [rows[0]!.n + 1])
            await client.query('COMMIT')
          } finally {
            client.release()
          }
        }),
      )
      const { rows } = await pool.query<{ n: number }>('SELECT n FROM counter WHERE id = 1')
      expect(rows[0]!.n).toBe(40)
    } finally {
      await pool.end()
    }
  })

  it('when a client disconnects inside a transaction, then its work is rolled back and others carry on', async () => {
    const quitter = new pg.Client({ connectionString: running.url })
    quitter.on('error', () => {})
    await quitter.connect()
    await quitter.query('BEGIN')
    await quitter.query('UPDATE counter SET n = -1 WHERE id = 1')
    const waiting = withClient(running.url, (c) =>
      c.query<{ n: number }>('SELECT n FROM counter WHERE id = 1'),
    )
    ;(quitter as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
    const { rows } = await waiting
    expect(rows[0]!.n).not.toBe(-1)
  })
})
