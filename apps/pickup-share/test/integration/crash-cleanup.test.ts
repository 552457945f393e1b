import { type ChildProcess, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { freePort } from '@quartet/core/testing'
import { api, testDeps } from '../support/harness.ts'

// Issue 23 item 6: the service killed with SIGKILL in the middle of six uploads leaves their
// temporary files behind; the next start removes them before it serves, and the permissions
// still work. The service runs as a real process (src/main.ts under tsx), killed for real.
const deps = testDeps()
const APP_DIR = path.join(__dirname, '../..')
const MiB = 1024 * 1024
const SIZE = 8 * MiB
let dir: string
let blobDir: string
let logFile: string
let url: string
let child: ChildProcess | undefined

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'crash-'))
  blobDir = path.join(dir, 'blobs')
  logFile = path.join(dir, 'service.log')
  url = `http://127.0.0.1:${await freePort()}`
})
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

async function startService(): Promise<ChildProcess> {
  const log = openSync(logFile, 'a')
  const proc = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: APP_DIR,
    // Nothing of the test run's environment: only what the service is given.
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      DATABASE_URL: deps.database.url,
      DATABASE_SCHEMA: deps.database.schema,
      MIGRATE_ON_START: 'false',
      PORT: new URL(url).port,
      HOST: '127.0.0.1',
      BLOB_DIR: blobDir,
      UPLOAD_TOKEN_SECRET: 'crash-test-upload-token-secret-0123456789',
      SWEEP_INTERVAL_SECONDS: '0',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', log, log],
  })
  closeSync(log)
  const deadline = Date.now() + 90_000
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`the service exited during start-up:\n${tail()}`)
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) })
      await res.arrayBuffer()
      if (res.status === 200) return proc
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the service did not get ready:\n${tail()}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

const tail = () =>
  existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n') : ''
const tmpFiles = () => {
  const tmp = path.join(blobDir, '.tmp')
  return existsSync(tmp) ? readdirSync(tmp) : []
}

/** A PUT that sends its first MiB and then waits, as a slow phone would, until the socket dies. */
function stalledUpload(grant: { upload: { url: string; headers: Record<string, string> } }) {
  const req = http.request(new URL(grant.upload.url, url), {
    method: 'PUT',
    headers: { ...grant.upload.headers, 'content-length': String(SIZE) },
  })
  const ended = new Promise<string>((resolve) => {
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    req.on('response', (res) => resolve(String(res.statusCode)))
  })
  req.write(randomBytes(MiB))
  return ended
}

it('when the service is killed with SIGKILL during 6 uploads, then the next start removes their partial files before serving, and the permissions still upload', async () => {
  child = await startService()
  const grants = await Promise.all(
    Array.from({ length: 6 }, async (_, i) => {
      const res = await api({ url }, 'POST', '/api/upload', {
        store: 'blob',
        name: `part-${i}.bin`,
        size: SIZE,
      })
      expect(res.status).toBe(200)
      return res.body as {
        pathname: string
        proof: string
        upload: { url: string; headers: Record<string, string> }
      }
    }),
  )
  const uploads = grants.map(stalledUpload)
  // Wait until every upload is on disk, part-written.
  for (let i = 0; i < 300; i++) {
    const files = tmpFiles()
    if (files.length === 6 && files.every((f) => statSync(path.join(blobDir, '.tmp', f)).size > 0)) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const partials = tmpFiles()
  expect(partials).toHaveLength(6)
  for (const f of partials)
    expect(f.startsWith(`${os.hostname().replace(/[^A-Za-z0-9-]/g, '_')}.${child.pid}.`)).toBe(true)

  child.kill('SIGKILL')
  await new Promise((r) => child!.once('exit', r))
  expect((await Promise.all(uploads)).every((r) => r === 'ECONNRESET' || r === 'EPIPE')).toBe(true)
  // A crash removes nothing: the half-written files stay until someone cleans up.
  expect(tmpFiles().sort()).toEqual(partials.sort())

  child = await startService()
  expect(tmpFiles()).toEqual([])
  const cleaned = readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((l) => l.includes('removed partial uploads'))
    .map((l) => JSON.parse(l) as { partialFiles: number; partialBytes: number })
  expect(cleaned).toHaveLength(1)
  expect(cleaned[0]!.partialFiles).toBe(6)
  expect(cleaned[0]!.partialBytes).toBeGreaterThanOrEqual(6)

  // The permissions survived the crash: the client sends again, shares, and the bytes come back.
  const data = randomBytes(SIZE)
  const put = await fetch(new URL(grants[0]!.upload.url, url), {
    method: 'PUT',
    headers: grants[0]!.upload.headers,
    body: new Uint8Array(data),
  })
  expect(put.status).toBe(201)
  const shared = await api({ url }, 'POST', '/api/share', {
    files: [
      {
        name: 'part-0.bin',
        size: SIZE,
        type: 'application/octet-stream',
        pathname: grants[0]!.pathname,
        proof: grants[0]!.proof,
        store: 'blob',
      },
    ],
  })
  expect(shared.status).toBe(200)
  const got = await fetch(
    `${url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(grants[0]!.pathname)}`,
  )
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
  expect(sha(Buffer.from(await got.arrayBuffer()))).toBe(sha(data))
  // And the store holds exactly the six permissions' bytes: nothing leaked, nothing lost.
  const row = (
    await deps.database.query<{ used_bytes: string; reserved_bytes: string }>(
      `SELECT used_bytes, reserved_bytes FROM store_instance WHERE id = 'blob'`,
    )
  ).rows[0]!
  expect(Number(row.used_bytes) + Number(row.reserved_bytes)).toBe(6 * SIZE)

  child.kill('SIGTERM')
  await new Promise((r) => child!.once('exit', r))
}, 240_000)
