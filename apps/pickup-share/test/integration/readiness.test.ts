import { rmSync } from 'node:fs'
import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { rawAccessOf } from '@quartet/core/db'
import { silentLogger, startTestServer, type RunningServer } from '@quartet/core/testing'
import { createApp } from '../../src/app.ts'
import { createDb, type Db } from '../../src/store/db.ts'
import { testConfig, testDeps } from '../support/harness.ts'

// Issue 48: /readyz once said 503 because one database ping took longer than 500 ms while
// Postgres was healthy and merely busy. A slow ping while other queries keep being answered must
// not flip readiness; a database that stopped answering still must, within a second or so.
const deps = testDeps()

/**
 * A TCP relay between the service's pool and the real Postgres: bytes pass through, or, frozen,
 * are held in both directions (what a SIGSTOPped or partitioned server looks like to a client).
 */
class Relay {
  private server: net.Server
  private frozen = false
  private readonly held: Array<() => void> = []
  private readonly sockets = new Set<net.Socket>()
  port = 0

  constructor(target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(target.port, target.host)
      for (const s of [client, upstream]) {
        this.sockets.add(s)
        s.on('error', () => undefined)
        s.on('close', () => {
          this.sockets.delete(s)
          client.destroy()
          upstream.destroy()
        })
      }
      const relay = (from: net.Socket, to: net.Socket) =>
        from.on('data', (chunk) => {
          if (this.frozen) this.held.push(() => to.write(chunk))
          else to.write(chunk)
        })
      relay(client, upstream)
      relay(upstream, client)
    })
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.port = (this.server.address() as net.AddressInfo).port
    return `127.0.0.1:${this.port}`
  }

  freeze(): void {
    this.frozen = true
  }

  thaw(): void {
    this.frozen = false
    for (const write of this.held.splice(0)) write()
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

describe('pickup-share /readyz (database required)', () => {
  let relay: Relay
  let db: Db
  let server: RunningServer
  let blobDir: string

  beforeAll(async () => {
    const url = new URL(deps.database.url)
    relay = new Relay({ host: url.hostname, port: Number(url.port || 5432) })
    url.host = await relay.start()
    // The service's own pool as production makes it: two connections, production deadlines.
    db = createDb({ url: url.toString(), schema: deps.database.schema, poolSize: 2 })
    const config = testConfig()
    blobDir = config.BLOB_DIR
    server = await startTestServer(createApp({ config, logger: silentLogger(), db, kv: deps.kv }))
  })
  afterAll(async () => {
    relay.thaw()
    await server.close()
    await db.$disconnect()
    await relay.close()
    rmSync(blobDir, { recursive: true, force: true })
  })

  /** /readyz until it is 200 with the database ok (a loaded machine may take a moment to connect). */
  const untilReady = async () => {
    let last: Awaited<ReturnType<typeof readyz>> | undefined
    for (let i = 0; i < 50; i++) {
      last = await readyz()
      if (last.status === 200 && last.body.checks.database === 'ok') return last
      await sleep(100)
    }
    return last!
  }

  const readyz = async () => {
    const res = await fetch(`${server.url}/readyz`, { signal: AbortSignal.timeout(5000) })
    return {
      status: res.status,
      body: (await res.json()) as { status: string; checks: Record<string, string> },
    }
  }

  it('when Postgres is busy (a ping queues behind other queries for over 500 ms while they keep being answered), then /readyz stays 200 (slow), and the next is ok', async () => {
    expect((await untilReady()).status).toBe(200)
    // 24 short queries on the pool's 2 connections: 600 ms of work ahead of the ping, answered
    // one after another, as under load.
    const pool = rawAccessOf(db)!.pool
    const busy = Promise.allSettled(Array.from({ length: 24 }, () => pool.query('SELECT pg_sleep(0.05)')))
    await sleep(20)

    const during = await readyz()
    expect(during.status).toBe(200)
    expect(during.body.checks.database).toBe('slow')

    await busy
    expect((await untilReady()).body.checks.database).toBe('ok')
  })

  it('when Postgres stops answering, then /readyz says 503 within a few seconds and stays so, and is 200 again once it answers', async () => {
    expect((await untilReady()).status).toBe(200)
    relay.freeze()
    try {
      const started = performance.now()
      const seen: number[] = []
      while (performance.now() - started < 5000) {
        const res = await readyz()
        seen.push(res.status)
        if (res.status === 503) break
      }
      // Nothing sent after the freeze is answered, so no ping after it passes as slow.
      expect(seen).toEqual([503])
      for (let i = 0; i < 3; i++) expect((await readyz()).status).toBe(503)
    } finally {
      relay.thaw()
    }
    let status = 0
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await readyz()).status
      if (status !== 200) await sleep(100)
    }
    expect(status).toBe(200)
  })
})
