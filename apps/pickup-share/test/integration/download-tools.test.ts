import { execFile, spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'
import { describeWhen } from '@quartet/core/testing'
import { startCutProxy } from '@quartet/core/testing/cut-proxy'

// Issue 42: a download counts once per receiver and file however the receiver's stock tool
// fetches it. Each case runs the real program against a ONE-download share and ends with the
// exact file (sha256) and the share used up by exactly that one download.

const CURL = { programs: [{ name: 'curl', debian: 'curl' }] }
const WGET = { programs: [{ name: 'wget', debian: 'wget' }] }
const ARIA2C = { programs: [{ name: 'aria2c', debian: 'aria2' }] }

jest.setTimeout(120_000)

const deps = testDeps()
let h: Harness
let dir: string
beforeAll(async () => {
  h = await startHarness(deps)
  dir = mkdtempSync(path.join(os.tmpdir(), 'download-tools-'))
})
afterAll(async () => {
  await h.close()
  rmSync(dir, { recursive: true, force: true })
})

const MiB = 1024 * 1024
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
let n = 0

async function share(size: number, maxDownloads = 1, files = 1) {
  const data = Array.from({ length: files }, () => randomBytes(size))
  const uploaded = []
  for (const [i, d] of data.entries())
    uploaded.push(
      (await uploadFile(h, { name: `part-${i}.bin`, data: d, type: 'application/octet-stream' })).file,
    )
  const res = await api(h, 'POST', '/api/share', { files: uploaded, maxDownloads })
  expect(res.status).toBe(200)
  const code = res.body.code as string
  const query = `code=${code}&path=${encodeURIComponent(uploaded[0]!.pathname)}`
  return { data: data[0]!, all: data, code, query, url: `${h.url}/api/download?${query}` }
}

/** What take says is left: a number, or 'used up' (410). */
const remaining = async (code: string) => {
  const taken = await api(h, 'POST', '/api/take', { code })
  return taken.status === 410 ? 'used up' : (taken.body.remaining as number)
}

/** A fresh output file name in the test's folder. */
const out = () => path.join(dir, `file-${++n}.bin`)

function run(program: string, args: string[]): Promise<{ exit: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(program, args, { timeout: 100_000 }, (error, stdout, stderr) =>
      resolve({
        exit: error ? Number((error as { code?: number }).code ?? -1) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      }),
    )
  })
}

const curl = (args: string[]) => run('curl', ['-sS', '-w', '%{http_code}', ...args])

/** Runs `program` until its output file holds `atLeast` bytes, then kills it (SIGKILL). */
async function killedAt(program: string, args: string[], file: string, atLeast: number): Promise<number> {
  const child = spawn(program, args, { stdio: 'ignore' })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  for (let i = 0; i < 2000; i++) {
    const size = existsSync(file) ? statSync(file).size : 0
    if (size >= atLeast || child.exitCode !== null) break
    await new Promise((r) => setTimeout(r, 10))
  }
  child.kill('SIGKILL')
  await exited
  return statSync(file).size
}

describeWhen(CURL, 'curl: cut near the start, the middle and the end, then curl -C -', () => {
  it.each([0.3, 0.85, 0.99])(
    'when the connection dies after %p of a 1-download share and curl -C - resumes, then the file is exact and exactly one download was spent',
    async (fraction) => {
      const size = 3 * MiB
      const s = await share(size)
      const cutAt = Math.floor(size * fraction)
      // The connection is killed by a hop the test controls, after exactly cutAt body bytes; the
      // app has handed more than that (often the whole file) to its socket by then.
      const proxy = await startCutProxy({ host: '127.0.0.1', port: Number(new URL(h.url).port) }, cutAt)
      const file = out()
      try {
        const cut = await curl(['-o', file, `${proxy.url}/api/download?${s.query}`])
        expect(cut.exit).toBe(18) // "partial file": the connection closed before Content-Length
      } finally {
        await proxy.close()
      }
      expect(statSync(file).size).toBe(cutAt)
      expect(await remaining(s.code)).toBe('used up')
      const resumed = await curl(['-C', '-', '-o', file, s.url])
      expect(resumed).toMatchObject({ exit: 0, stdout: '206' })
      expect(sha(readFileSync(file))).toBe(sha(s.data))
      // Exactly one download: used up, and another address has none (it pays its own).
      expect(await remaining(s.code)).toBe('used up')
      expect((await curl(['-o', out(), '-H', 'x-forwarded-for: 198.51.100.42', s.url])).stdout).toBe('410')
    },
  )

  it('when the resume asks for the last byte only (cut one byte short), then it joins the open transfer', async () => {
    const size = 3 * MiB
    const s = await share(size)
    const proxy = await startCutProxy({ host: '127.0.0.1', port: Number(new URL(h.url).port) }, size - 1)
    const file = out()
    try {
      expect((await curl(['-o', file, `${proxy.url}/api/download?${s.query}`])).exit).toBe(18)
    } finally {
      await proxy.close()
    }
    const resumed = await curl(['-C', '-', '-o', file, s.url])
    expect(resumed).toMatchObject({ exit: 0, stdout: '206' })
    expect(sha(readFileSync(file))).toBe(sha(s.data))
    expect(await remaining(s.code)).toBe('used up')
  })
})

describeWhen(WGET, 'wget killed mid-way, then wget -c', () => {
  it('when wget is killed mid-way and run again with -c, then the file is exact and exactly one download was spent', async () => {
    const size = 4 * MiB
    const s = await share(size)
    const file = out()
    const args = ['-q', '-O', file, s.url]
    const partial = await killedAt('wget', ['--limit-rate=2m', ...args], file, size * 0.4)
    expect(partial).toBeGreaterThan(0)
    expect(partial).toBeLessThan(size)
    expect(await remaining(s.code)).toBe('used up')
    const resumed = await run('wget', ['-c', ...args])
    expect(resumed.exit).toBe(0)
    expect(sha(readFileSync(file))).toBe(sha(s.data))
    expect(await remaining(s.code)).toBe('used up')
    expect(
      (await run('wget', ['-q', '-O', out(), '--header', 'X-Forwarded-For: 198.51.100.43', s.url])).exit,
    ).toBe(8)
  })
})

describeWhen(ARIA2C, 'aria2c: a whole-file GET, then parallel ranges', () => {
  it.each([[['-x4', '-s4']], [['-x4', '-s4', '-k1M']]])(
    'when aria2c %p fetches a 24 MiB file of a 1-download share, then it ends with the exact file and one download spent',
    async (flags) => {
      const size = 24 * MiB
      const s = await share(size)
      const name = `aria-${++n}.bin`
      const got = await run('aria2c', [
        ...flags,
        '--allow-overwrite=true',
        '--auto-file-renaming=false',
        '--file-allocation=none',
        '--console-log-level=warn',
        '--summary-interval=0',
        '-d',
        dir,
        '-o',
        name,
        s.url,
      ])
      expect(got.stderr + got.stdout).not.toMatch(/410|errorCode=22/)
      expect(got.exit).toBe(0)
      expect(sha(readFileSync(path.join(dir, name)))).toBe(sha(s.data))
      expect(await remaining(s.code)).toBe('used up')
      // Running it again is the same receiver within its window: still the file while the
      // transfer's room holds it. Once the first run's requests have ended on the server (what
      // they drew and did not send is room again), with one connection. The first run's parallel
      // ranges cost the budget what the server handed to the kernel when aria2c let each go,
      // which the receiver's socket buffers decide (up to 32 MiB each where net.ipv4.tcp_rmem
      // allows it), so two runs of a 24 MiB file need not fit in its 64 MiB: then 410.
      let room = 0
      for (let i = 0; i < 100; i++) {
        const rows = await deps.db.downloadTransfer.findMany({
          where: { share: { code: s.code } },
          select: { room: true, reserved: true },
        })
        room = rows.reduce((most, r) => Math.max(most, Number(r.room)), 0)
        if (rows.every((r) => Number(r.reserved) === 0)) break
        await new Promise((r) => setTimeout(r, 100))
      }
      const again = await run('aria2c', [
        '-x1',
        '--allow-overwrite=true',
        '-d',
        dir,
        '-o',
        `${name}.2`,
        s.url,
      ])
      if (room >= size)
        // What aria2c said, when it failed (the status it met).
        expect({ exit: again.exit, said: again.exit ? again.stderr + again.stdout : '' }).toEqual({
          exit: 0,
          said: '',
        })
      else
        expect({ exit: again.exit, gone: /410/.test(again.stderr + again.stdout) }).toEqual({
          exit: 22,
          gone: true,
        })
      expect(await remaining(s.code)).toBe('used up')
    },
  )
})

describeWhen(CURL, 'download all: a cut archive resumes as one download', () => {
  it('when a ZIP of a 1-download share is cut at 60 % and curl -C - resumes it, then the archive is byte-identical to a whole one and one download was spent', async () => {
    const s = await share(MiB, 1, 3)
    const zipQuery = `code=${s.code}`
    const headers = await fetch(`${h.url}/api/download-all?${zipQuery}`, { method: 'HEAD' })
    const zipSize = Number(headers.headers.get('content-length'))
    expect(headers.headers.get('accept-ranges')).toBe('bytes')
    const proxy = await startCutProxy(
      { host: '127.0.0.1', port: Number(new URL(h.url).port) },
      Math.floor(zipSize * 0.6),
    )
    const file = out()
    try {
      expect((await curl(['-o', file, `${proxy.url}/api/download-all?${zipQuery}`])).exit).toBe(18)
    } finally {
      await proxy.close()
    }
    expect(await remaining(s.code)).toBe('used up')
    const resumed = await curl(['-C', '-', '-o', file, `${h.url}/api/download-all?${zipQuery}`])
    expect(resumed).toMatchObject({ exit: 0, stdout: '206' })
    // The same receiver's whole archive again (free within its budget) is the reference.
    const whole = Buffer.from(await (await fetch(`${h.url}/api/download-all?${zipQuery}`)).arrayBuffer())
    expect(whole.length).toBe(zipSize)
    expect(sha(readFileSync(file))).toBe(sha(whole))
    // Each file of the archive is in it, stored (ZIP "stored" entries carry the bytes as they are).
    for (const d of s.all) expect(whole.indexOf(d.subarray(0, 4096))).toBeGreaterThan(0)
    expect(await remaining(s.code)).toBe('used up')
  })
})
