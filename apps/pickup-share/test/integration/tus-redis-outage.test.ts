import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { RedisKeyValueStore } from '@quartet/core/kv'
import { api, type Harness, startHarness, testDeps } from '../support/harness.ts'

// STYLE 17: the locks of resumable uploads live in Redis; a Redis server of this test's own (never
// the shared one) is frozen with SIGSTOP, then killed, while an upload is half done.
const REDIS_SERVER = '/usr/bin/redis-server'
const haveRedis = existsSync(REDIS_SERVER)
if (!haveRedis) console.warn(`tus Redis outage tests SKIPPED: ${REDIS_SERVER} is missing`)
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
  kv = RedisKeyValueStore.connect(`redis://127.0.0.1:${port}`, 'tus-outage-test:')
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

const TUS = { 'tus-resumable': '1.0.0' }

describeRedis('resumable uploads with their Redis frozen, then killed', () => {
  it('when Redis is frozen or gone, then tus requests answer 503 with Retry-After within 2 s, and the upload resumes once it is back', async () => {
    const size = 200_000
    const data = Buffer.alloc(size, 7)
    const grant = (await api(h, 'POST', '/api/upload', { store: 'blob', name: 'outage.bin', size })).body
    const created = await fetch(`${h.url}${grant.tus.endpoint}`, {
      method: 'POST',
      headers: { ...TUS, ...grant.tus.headers, 'upload-length': String(size) },
    })
    expect(created.status).toBe(201)
    const url = new URL(created.headers.get('location')!, h.url)
    const patch = (offset: number, body: Buffer) =>
      fetch(url, {
        method: 'PATCH',
        headers: {
          ...TUS,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
        },
        body: new Uint8Array(body),
      })
    expect((await patch(0, data.subarray(0, size / 2))).status).toBe(204)

    redis.kill('SIGSTOP')
    try {
      for (const call of [
        () => fetch(url, { method: 'HEAD', headers: TUS }),
        () => patch(size / 2, data.subarray(size / 2)),
      ]) {
        const [res, ms] = await timed(call)
        expect(res.status).toBe(503)
        expect(res.headers.get('retry-after')).toBe('5')
        expect(ms).toBeLessThan(2000)
        await res.arrayBuffer()
      }
    } finally {
      redis.kill('SIGCONT')
    }

    // Back: the offset is where it was, and the rest completes the file.
    await sleep(500)
    const head = await fetch(url, { method: 'HEAD', headers: TUS })
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe(String(size / 2))
    expect((await patch(size / 2, data.subarray(size / 2))).status).toBe(204)
    const shared = await api(h, 'POST', '/api/share', {
      files: [
        {
          name: 'outage.bin',
          size,
          type: 'application/octet-stream',
          pathname: grant.pathname,
          store: 'blob',
        },
      ],
    })
    expect(shared.status).toBe(200)

    redis.kill('SIGKILL')
    await sleep(100)
    const [gone, ms] = await timed(() => fetch(url, { method: 'HEAD', headers: TUS }))
    expect(gone.status).toBe(503)
    expect(gone.headers.get('retry-after')).toBe('5')
    expect(ms).toBeLessThan(2000)
  })
})
