import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { RedisKeyValueStore } from '@quartet/core/kv'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// STYLE 17: the fault with a real process. A Redis server of this test's own (never the shared
// one) is frozen with SIGSTOP, then killed, while pickup-share uses it.
const REDIS_SERVER = '/usr/bin/redis-server'
const haveRedis = existsSync(REDIS_SERVER)
if (!haveRedis)
  console.warn(`Redis outage tests SKIPPED: ${REDIS_SERVER} is missing (apt-get install redis-server)`)
const describeRedis = haveRedis ? describe : describe.skip

jest.setTimeout(60_000)

const deps = testDeps()
let redis: ChildProcess
let kv: RedisKeyValueStore
let h: Harness

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

beforeAll(async () => {
  if (!haveRedis) return
  const port = await freePort()
  redis = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  )
  for (let i = 0; i < 100; i++) {
    try {
      execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'ignore' })
      break
    } catch {
      await sleep(50)
    }
  }
  kv = RedisKeyValueStore.connect(`redis://127.0.0.1:${port}`, 'outage-test:')
  h = await startHarness(deps, { kv })
})

afterAll(async () => {
  if (!haveRedis) return
  await h?.close()
  const exited =
    redis.exitCode === null && redis.signalCode === null ? new Promise((r) => redis.once('exit', r)) : null
  redis.kill('SIGCONT')
  redis.kill('SIGKILL')
  await exited
  const ended = new Promise((resolve) => kv.redis.once('end', resolve))
  kv.redis.disconnect()
  await Promise.race([ended, sleep(2000)])
})

async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now()
  const result = await f()
  return [result, performance.now() - started]
}

describeRedis('pickup-share with its Redis frozen, then killed', () => {
  it('when Redis is frozen and then killed, then take and download answer within 2 s, admin answers 503, and all recover when it is back', async () => {
    const data = Buffer.from('survives an outage')
    const { file } = await uploadFile(h, { name: 'outage.txt', data })
    const { code, token } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 4 })).body
    const session = await adminLogin(h)
    const dl = (q: Record<string, string>) =>
      fetch(`${h.url}/api/download?${new URLSearchParams({ ...q, path: file.pathname }).toString()}`)

    redis.kill('SIGSTOP')
    try {
      const calls: Array<() => Promise<{ status: number }>> = [
        () => api(h, 'POST', '/api/take', { code }),
        () => api(h, 'POST', '/api/take', { token }),
        async () => {
          const res = await dl({ code })
          return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
        },
      ]
      for (const call of calls) {
        const [res, ms] = await timed(call)
        expect(res.status).toBe(200)
        expect(ms).toBeLessThan(2000)
      }
      const [admin, ms] = await timed(() => api(h, 'GET', '/api/admin/shares', undefined, session))
      expect(admin.status).toBe(503)
      expect(admin.headers.get('retry-after')).toBe('5')
      expect(ms).toBeLessThan(2000)
    } finally {
      redis.kill('SIGCONT')
    }

    // Back: admin works again (after the kv pause), and the count is exact: 4 - 1 = 3 left.
    await sleep(2100)
    expect((await api(h, 'GET', '/api/admin/shares', undefined, session)).status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(3)

    redis.kill('SIGKILL')
    await sleep(100)
    const [take, takeMs] = await timed(() => api(h, 'POST', '/api/take', { code }))
    expect(take.status).toBe(200)
    expect(takeMs).toBeLessThan(2000)
    const [down, downMs] = await timed(async () => {
      const res = await dl({ token })
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
    })
    expect(down.status).toBe(200)
    expect(down.body.equals(data)).toBe(true)
    expect(downMs).toBeLessThan(2000)
    expect((await api(h, 'GET', '/api/admin/shares', undefined, session)).status).toBe(503)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(2)
  })
})
