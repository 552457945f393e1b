import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describeWhen } from '@quartet/core/testing'
import { api, type Harness, startHarness, testDeps } from '../support/harness.ts'

// Issue 23 item 3: an over-cap upload gets its 413 — before `100 Continue` when the length is
// declared — and the connection closes without a reset, so the client reads the final status.
// Driven by the real curl binary (Debian's `curl` package).
const CURL = { programs: [{ name: 'curl', debian: 'curl' }] }

const deps = testDeps()
let h: Harness
let dir: string
/** 1,048,576,001 bytes (the report's size), sparse: it costs no disk. */
let huge: string
let small: string
beforeAll(async () => {
  h = await startHarness(deps)
  dir = mkdtempSync(path.join(os.tmpdir(), 'over-cap-'))
  huge = path.join(dir, 'huge.bin')
  writeFileSync(huge, '')
  truncateSync(huge, 1_048_576_001)
  small = path.join(dir, 'small.bin')
  writeFileSync(small, Buffer.alloc(2 * 1024 * 1024, 7))
})
afterAll(async () => {
  await h.close()
  rmSync(dir, { recursive: true, force: true })
})

interface CurlRun {
  /** curl's exit code: 0 = the transfer ended with a response read in full. */
  exit: number
  status: number
  body: string
  continues: number
}

function curl(file: string, token: string, headers: string[]): Promise<CurlRun> {
  const out = path.join(dir, `out-${Math.random().toString(36).slice(2)}`)
  const args = ['-v', '-sS', '-o', out, '-w', '%{http_code}', '-T', file, '-H', `x-upload-token: ${token}`]
  args.push('-H', 'content-type: application/octet-stream', ...headers.flatMap((x) => ['-H', x]))
  args.push(`${h.url}/api/blob/upload`)
  return new Promise((resolve) => {
    execFile('curl', args, { timeout: 120_000 }, (error, stdout, stderr) => {
      let body = ''
      try {
        body = readFileSync(out, 'utf8')
        rmSync(out)
      } catch {
        // no body written
      }
      resolve({
        exit: error ? Number((error as { code?: number }).code ?? -1) : 0,
        status: Number(stdout),
        body,
        continues: (stderr.match(/^< HTTP\/1\.1 100 Continue/gm) ?? []).length,
      })
    })
  })
}

async function token(size: number): Promise<string> {
  const grant = await api(h, 'POST', '/api/upload', { store: 'blob', name: 'cap.bin', size })
  expect(grant.status).toBe(200)
  return grant.body.upload.headers['x-upload-token'] as string
}

const RUNS = 34

describeWhen(CURL, 'over-cap uploads with curl', () => {
  it.each([
    ['a declared Content-Length with Expect: 100-continue (curl -T)', [], 0],
    ['a declared Content-Length sent at once (Expect switched off)', ['Expect:'], 0],
    ['a chunked body crossing the size', ['Transfer-Encoding: chunked'], 1],
  ] as const)(
    `when ${RUNS} runs send 1,048,576,001 bytes to a 10-byte permission as %s, then every run ends with 413 in the envelope and curl exit 0`,
    async (_, headers, continues) => {
      const runs: CurlRun[] = []
      for (let i = 0; i < RUNS; i++) runs.push(await curl(huge, await token(10), [...headers]))
      const bad = runs.filter((r) => r.exit !== 0 || r.status !== 413)
      expect(bad).toEqual([])
      for (const r of runs) {
        expect(JSON.parse(r.body).error.code).toBe('file_too_large')
        // A declared length over the size is refused before the body is asked for; a chunked
        // body's length is only known while it arrives, so that one gets `100 Continue` first.
        expect(r.continues).toBe(continues)
      }
    },
    300_000,
  )

  it('when the upload is within its permission, then curl gets 100 Continue, sends it and gets 201', async () => {
    const run = await curl(small, await token(2 * 1024 * 1024), ['Expect: 100-continue'])
    expect(run).toMatchObject({ exit: 0, status: 201, continues: 1 })
    expect(JSON.parse(run.body).size).toBe(2 * 1024 * 1024)
  })

  it('when the token is invalid, then 401 comes before 100 Continue', async () => {
    const run = await curl(huge, 'not-a-token', [])
    expect(run).toMatchObject({ exit: 0, status: 401, continues: 0 })
    expect(JSON.parse(run.body).error.code).toBe('upload_token_invalid')
  })
})
