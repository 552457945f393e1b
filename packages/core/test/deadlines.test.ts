import net from 'node:net'
import { request } from '../src/testing.ts'
import { createPgPool } from '../src/db.ts'
import { ApiError, dependencyFailure, toApiError } from '../src/errors.ts'
import { createHttpApp } from '../src/http.ts'
import { RedisKeyValueStore } from '../src/kv.ts'
import {
  itWhen,
  type OwnRedis,
  silentLogger,
  startOwnRedis,
  startSilentServer,
  testDatabaseUrl,
  uniqueName,
} from '../src/testing.ts'

/** The embedded Postgres (no DATABASE_URL) serves one session at a time and cannot cancel a statement. */
const realPostgres = (title: string, fn: jest.ProvidesCallback, timeout?: number) =>
  itWhen({ postgresServer: true }, title, fn, timeout)

/** Time a promise that must fail: how long it took, and what it threw. */
async function failure(promise: Promise<unknown>): Promise<{ ms: number; err: unknown }> {
  const started = performance.now()
  try {
    await promise
  } catch (err) {
    return { ms: performance.now() - started, err }
  }
  throw new Error('expected a failure')
}

/**
 * A TCP proxy to the test's Postgres that can hold back the start of each connection, or stop
 * passing bytes both ways (what a frozen server looks like), without touching the server. While
 * frozen it also holds back its answer to a client's FIN, as a frozen server's end never closes.
 */
async function proxyToPostgres(options: { openDelayMs?: number } = {}) {
  const target = new URL(testDatabaseUrl())
  let frozen = false
  const held: Array<() => void> = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    sockets.add(client)
    client.pause()
    setTimeout(() => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname)
      sockets.add(upstream)
      const pass = (from: net.Socket, to: net.Socket) =>
        from.on('data', (chunk) => {
          if (frozen) held.push(() => to.write(chunk))
          else to.write(chunk)
        })
      pass(client, upstream)
      pass(upstream, client)
      for (const s of [client, upstream]) s.on('error', () => {})
      client.on('close', () => upstream.destroy())
      upstream.on('close', () => client.destroy())
      client.on('end', () => {
        const goodbye = () => {
          upstream.end()
          client.end()
        }
        if (frozen) held.push(goodbye)
        else goodbye()
      })
      client.resume()
    }, options.openDelayMs ?? 0)
  })
  server.listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const url = new URL(testDatabaseUrl())
  url.host = `127.0.0.1:${(server.address() as net.AddressInfo).port}`
  return {
    url: url.toString(),
    freeze: () => void (frozen = true),
    thaw: () => {
      frozen = false
      for (const write of held.splice(0)) write()
    },
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

function expect503(err: unknown) {
  const api = toApiError(err)
  expect(api.code).toBe('service_unavailable')
  expect(api.status).toBe(503)
  expect(api.headers).toEqual({ 'Retry-After': '5' })
}

describe('deadlines: no request waits long on a dead or frozen dependency, and the answer is 503', () => {
  describe('Postgres', () => {
    it('when nothing listens, then a query fails at once as 503', async () => {
      const pool = createPgPool('postgresql://postgres@127.0.0.1:1/postgres')
      const { ms, err } = await failure(pool.query('select 1'))
      await pool.end()
      expect(ms).toBeLessThan(1000)
      expect503(err)
    })

    it('when the server accepts but never answers (frozen), then connecting gives up after the connect deadline as 503', async () => {
      const silent = await startSilentServer()
      const pool = createPgPool(`postgresql://postgres@127.0.0.1:${silent.port}/postgres`, {
        deadlines: { connectTimeoutMs: 300 },
      })
      const { ms, err } = await failure(pool.query('select 1'))
      // Closed first: the connection still opening (it may take 10 s) then fails at once.
      await silent.close()
      await pool.end().catch(() => {})
      expect(ms).toBeGreaterThanOrEqual(250)
      expect(ms).toBeLessThan(1500)
      expect503(err)
    })

    realPostgres(
      'when a query runs past its deadline, then the server cancels it, the error is 503, and the connection serves the next query',
      async () => {
        const pool = createPgPool(testDatabaseUrl(), { max: 1, deadlines: { queryTimeoutMs: 200 } })
        const { ms, err } = await failure(pool.query('select pg_sleep(3)'))
        expect(ms).toBeLessThan(1500)
        expect((err as { code?: string }).code).toBe('57014')
        expect503(err)
        expect((await pool.query('select 42 as x')).rows).toEqual([{ x: 42 }])
        await pool.end()
      },
    )

    realPostgres(
      'when a new connection is slow to open and its caller gives up, then it still opens and serves the next caller',
      async () => {
        const proxy = await proxyToPostgres({ openDelayMs: 600 })
        const pool = createPgPool(proxy.url, { max: 1, deadlines: { connectTimeoutMs: 200 } })
        try {
          const { ms, err } = await failure(pool.query('select 1'))
          expect(ms).toBeLessThan(500)
          expect503(err)
          await new Promise((resolve) => setTimeout(resolve, 1000))
          const started = performance.now()
          expect((await pool.query('select 7 as x')).rows).toEqual([{ x: 7 }])
          // The connection the first caller started, not a new one (which would take 600 ms).
          expect(performance.now() - started).toBeLessThan(400)
          expect(pool.totalCount).toBe(1)
        } finally {
          await pool.end()
          await proxy.close()
        }
      },
    )

    realPostgres(
      "when a service's pool has never connected, then its first callers (the start-up) wait for a slow first connection, and later ones only the connect deadline",
      async () => {
        const proxy = await proxyToPostgres({ openDelayMs: 600 })
        const pool = createPgPool(proxy.url, {
          max: 2,
          deadlines: { connectTimeoutMs: 200, firstConnectTimeoutMs: 5000 },
        })
        const busy = await pool.connect().catch(() => null)
        try {
          expect(busy).not.toBeNull()
          // The pool's one idle slot is taken; a second caller needs a new, slow connection.
          const { ms, err } = await failure(pool.query('select 1'))
          expect(ms).toBeLessThan(500)
          expect503(err)
        } finally {
          busy?.release()
          await pool.end()
          await proxy.close()
        }
      },
    )

    realPostgres(
      'when Postgres freezes inside a transaction, then the query fails at its deadline and the ROLLBACK fails at once, not after another',
      async () => {
        const proxy = await proxyToPostgres()
        const pool = createPgPool(proxy.url, { max: 2, deadlines: { queryTimeoutMs: 300 } })
        try {
          const client = await pool.connect()
          await client.query('BEGIN')
          proxy.freeze()
          const stuck = await failure(client.query('select 1'))
          expect(stuck.ms).toBeLessThan(1000)
          expect503(stuck.err)
          const rollback = await failure(client.query('ROLLBACK'))
          // At once, not after a deadline of its own (1 s): room for a loaded CI machine.
          expect(rollback.ms).toBeLessThan(500)
          expect503(rollback.err)
          client.release()
          proxy.thaw()
          expect((await pool.query('select 8 as x')).rows).toEqual([{ x: 8 }])
        } finally {
          proxy.thaw()
          await pool.end()
          await proxy.close()
        }
      },
    )

    realPostgres(
      'when Postgres freezes under a checked-out client, then the client closes its connection at once, without waiting for the frozen server, and the pool never hands it out again',
      async () => {
        const proxy = await proxyToPostgres()
        const pool = createPgPool(proxy.url, { max: 1, deadlines: { queryTimeoutMs: 300 } })
        const client = await pool.connect()
        let released = false
        try {
          let closedAfterMs: number | undefined
          const started = performance.now()
          client.on('end', () => {
            closedAfterMs = performance.now() - started
          })
          proxy.freeze()
          const stuck = await failure(client.query('select 1'))
          expect503(stuck.err)
          await new Promise((resolve) => setTimeout(resolve, 200))
          // Still frozen: a goodbye (Terminate, then FIN) would leave it open until the server's FIN.
          expect(closedAfterMs).toBeGreaterThanOrEqual(stuck.ms)
          expect(closedAfterMs).toBeLessThan(stuck.ms + 200)
          released = true
          client.release()
          expect(pool.totalCount).toBe(0)
          proxy.thaw()
          const next = await pool.connect()
          try {
            expect(next).not.toBe(client)
            expect((await next.query('select 10 as x')).rows).toEqual([{ x: 10 }])
          } finally {
            next.release()
          }
        } finally {
          if (!released) client.release(true)
          proxy.thaw()
          await pool.end()
          await proxy.close()
        }
      },
    )

    realPostgres(
      'when the server drops a checked-out connection, then nothing crashes and the pool reconnects',
      async () => {
        const pool = createPgPool(testDatabaseUrl(), { max: 1 })
        const admin = createPgPool(testDatabaseUrl(), { max: 1 })
        const uncaught: unknown[] = []
        const onUncaught = (err: unknown) => uncaught.push(err)
        process.on('uncaughtException', onUncaught)
        try {
          const client = await pool.connect()
          const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid')
          // What a Postgres restart or failover does to a connection a request holds.
          await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid])
          await new Promise((resolve) => setTimeout(resolve, 300))
          client.release(true)
          expect(uncaught).toEqual([])
          expect((await pool.query('select 9 as x')).rows).toEqual([{ x: 9 }])
        } finally {
          process.off('uncaughtException', onUncaught)
          await pool.end()
          await admin.end()
        }
      },
    )

    realPostgres(
      'when a pool is ended while a handler is between two of its queries (its client went away, it runs on), then the second query still runs and the pool ends after it',
      async () => {
        const pool = createPgPool(testDatabaseUrl(), { max: 2 })
        // A handler: one query, some other work (a provider call), then its write. The gap is
        // well inside the 100 ms the pool waits for quiet, so that a loaded machine's late timer
        // (CI on Node 24 once fired this one more than 50 ms late) does not outlast it.
        const handler = (async () => {
          await pool.query('select 1')
          await new Promise((resolve) => setTimeout(resolve, 10))
          return (await pool.query('select 2 as x')).rows
        })()
        await new Promise((resolve) => setTimeout(resolve, 20))
        const started = performance.now()
        const ended = pool.end()
        expect(await handler).toEqual([{ x: 2 }])
        await ended
        expect(performance.now() - started).toBeLessThan(2_500)
        await expect(pool.query('select 3')).rejects.toThrow(/after calling end/)
      },
    )

    realPostgres('when an idle pool is ended, then it ends at once', async () => {
      const pool = createPgPool(testDatabaseUrl(), { max: 1 })
      await new Promise((resolve) => setTimeout(resolve, 150))
      const started = performance.now()
      await pool.end()
      // At once, not after an idle client's timeout: room for a loaded CI machine.
      expect(performance.now() - started).toBeLessThan(1_000)
    })

    realPostgres(
      'when the query deadline is 0 (migrations, operator jobs), then long queries run',
      async () => {
        const pool = createPgPool(testDatabaseUrl(), { max: 1, deadlines: { queryTimeoutMs: 0 } })
        const { rows } = await pool.query("select current_setting('statement_timeout') as t")
        await pool.end()
        expect(rows[0].t).toBe('0')
      },
    )
  })

  describe('Redis', () => {
    let redis: OwnRedis
    beforeAll(async () => {
      redis = await startOwnRedis()
    })
    afterAll(async () => {
      await redis.stop()
    })

    it('when Redis is frozen (SIGSTOP), then a command fails after the command deadline as 503, the next ones at once for a moment, and all works again once it thaws', async () => {
      const kv = RedisKeyValueStore.connect(redis.url, `${uniqueName('deadline')}:`, 300)
      try {
        await kv.set('k', 'v')
        redis.freeze()
        const first = await failure(kv.get('k'))
        expect(first.ms).toBeGreaterThanOrEqual(250)
        expect(first.ms).toBeLessThan(1500)
        expect503(first.err)
        // Paused: a request's further kv calls do not each wait out a deadline.
        // At once: well inside the 300 ms deadline, with room for a loaded CI machine.
        const next = await failure(kv.incrWithTtl('n', 1, 10_000))
        expect(next.ms).toBeLessThan(200)
        expect503(next.err)
        const hit = await failure(kv.hitWindow('w', 1, 10_000))
        expect(hit.ms).toBeLessThan(200)
        redis.thaw()
        // A readiness ping tries despite the pause, and a good answer ends it.
        await kv.ping()
        expect(await kv.get('k')).toBe('v')
        // Nothing sent during the pause reached Redis.
        expect(await kv.get('n')).toBeNull()
      } finally {
        redis.thaw()
        await kv.close()
      }
    })

    it('when this process is busy past the command deadline while the answer arrives, then the command succeeds and nothing pauses (the deadline blames Redis only for its own lateness)', async () => {
      const kv = RedisKeyValueStore.connect(redis.url, `${uniqueName('deadline')}:`, 300)
      try {
        await kv.set('k', 'v')
        const busy = (ms: number) => {
          const until = Date.now() + ms
          while (Date.now() < until);
        }
        // Asked, then the event loop held for twice the deadline: the answers wait in the socket.
        const read = kv.get('k')
        const hit = kv.hitWindow('w', 1, 10_000)
        // Microtasks only (no I/O): the commands go out, their answers are not read yet.
        for (let i = 0; i < 10; i++) await null
        busy(600)
        await expect(read).resolves.toBe('v')
        await expect(hit).resolves.toMatchObject({ count: 1 })
        // Not paused: the next command goes to Redis.
        await expect(kv.incrWithTtl('n', 1, 10_000)).resolves.toBe(1)
      } finally {
        await kv.close()
      }
    })

    it('when the process is busy past the first-connection wait right after it connects, then its first command still goes through', async () => {
      const kv = RedisKeyValueStore.connect(redis.url, `${uniqueName('deadline')}:`, 300)
      try {
        // Nothing of the connection has been read yet when the wait (2 s) runs out.
        const until = Date.now() + 2300
        while (Date.now() < until);
        await expect(kv.set('first', '1')).resolves.toBeUndefined()
      } finally {
        await kv.close()
      }
    })

    it('when Redis is stopped, then commands fail at once as 503 (no offline queue), and recover when it is back', async () => {
      const kv = RedisKeyValueStore.connect(redis.url, `${uniqueName('deadline')}:`, 300)
      try {
        await kv.set('k', 'v')
        await redis.stop()
        await new Promise((resolve) => setTimeout(resolve, 100))
        const { ms, err } = await failure(kv.incrWithTtl('n', 1, 10_000))
        // At once: refused by the closed connection, not left to run into the 300 ms deadline
        // (a loaded CI machine took 156 ms to say so).
        expect((err as Error).message).not.toMatch(/timed out/)
        expect(ms).toBeLessThan(300)
        expect503(err)
        await redis.start()
        let value: number | undefined
        for (let i = 0; i < 60 && value === undefined; i++) {
          value = await kv.incrWithTtl('n', 1, 10_000).catch(() => undefined)
          if (value === undefined) await new Promise((resolve) => setTimeout(resolve, 100))
        }
        expect(value).toBe(1)
      } finally {
        await kv.close()
      }
    })
  })

  describe('the envelope', () => {
    it('when a route fails on a dependency, then it answers 503 service_unavailable with Retry-After, its message hidden', async () => {
      const pool = createPgPool('postgresql://postgres@127.0.0.1:1/postgres')
      const { app } = createHttpApp(
        { name: 'deadline', logger: silentLogger(), envelope: 'rest', trustProxy: ['loopback'] },
        (a) => {
          a.get('/things', async (_req, res) => {
            res.json((await pool.query('select 1')).rows)
          })
        },
      )
      const res = await request(app).get('/things').expect(503)
      await pool.end()
      expect(res.headers['retry-after']).toBe('5')
      expect(res.body).toMatchObject({
        success: false,
        error: { code: 'service_unavailable', message: 'service unavailable' },
      })
    })

    it('when Prisma reports an unreachable database, a pool timeout, or a cancelled statement, then each is 503', () => {
      const prisma = (code: string, cause: unknown) =>
        Object.assign(new Error('\nInvalid `prisma.x()` invocation'), {
          name: 'PrismaClientKnownRequestError',
          code,
          meta: { driverAdapterError: { name: 'DriverAdapterError', cause } },
        })
      expect(dependencyFailure(prisma('P1001', { kind: 'DatabaseNotReachable' }))).toBe('unavailable')
      expect(dependencyFailure(prisma('P2010', { kind: 'postgres', code: '57014' }))).toBe('unavailable')
      expect(dependencyFailure(prisma('P2010', { kind: 'postgres', code: '22021' }))).toBe(
        'untranslatable_text',
      )
      // An interactive transaction that found no connection within maxWait, or ran past its timeout.
      expect(
        dependencyFailure(
          Object.assign(
            new Error('Transaction API error: Unable to start a transaction in the given time.'),
            {
              name: 'TransactionManagerError',
              code: 'P2028',
            },
          ),
        ),
      ).toBe('unavailable')
      expect(dependencyFailure(prisma('P2002', { kind: 'UniqueConstraintViolation' }))).toBeUndefined()
      expect(
        dependencyFailure(
          Object.assign(new Error('Connection terminated due to connection timeout'), {
            cause: new Error('Connection terminated unexpectedly'),
          }),
        ),
      ).toBe('unavailable')
      expect(dependencyFailure(new Error('Command timed out'))).toBe('unavailable')
      expect(dependencyFailure(new TypeError('x is undefined'))).toBeUndefined()
      expect(toApiError(new TypeError('x')).code).toBe('internal_error')
    })

    it('when Postgres refuses text it cannot store, then the client hears 400, not 500', async () => {
      const pool = createPgPool(testDatabaseUrl(), { max: 1 })
      const { err } = await failure(pool.query('select $1::text', ['a\u0000b']))
      await pool.end()
      const api = toApiError(err)
      expect(api).toBeInstanceOf(ApiError)
      expect(api.code).toBe('bad_request')
    })
  })
})
