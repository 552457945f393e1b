import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { captureLogger, startTestServer, type RunningServer } from '@quartet/core/testing'
import { buildPickupShare, type PickupShare } from '../../src/app.ts'
import { type GitServer, type MirrorServer, startGitServer, startMirror } from '../support/git-server.ts'
import { api, type Reply, testConfig, testDeps } from '../support/harness.ts'

const deps = testDeps()
const TOKEN = 'ghp_loopbackTokenThatMustNeverLeak0123'
const USER = 'x-access-token'
const CAP = 2 * 1024 * 1024

let git: GitServer
let remote: { remoteUrl: string; gitDir: string }
let mirrors: MirrorServer[]
let server: RunningServer
let cacheDir: string
let blobDir: string
let services: PickupShare['services']
const captured = captureLogger('repo-test')
const replies: Reply[] = []
const h = { url: '' }

async function call(method: string, p: string, body?: unknown, headers?: Record<string, string>) {
  const r = await api(h, method, p, body, headers)
  replies.push(r)
  return r
}

function configFor(cache: string) {
  return testConfig({
    BLOB_DIR: blobDir,
    REPO_REMOTE_URL: remote.remoteUrl,
    REPO_TOKEN: TOKEN,
    REPO_USERNAME: USER,
    REPO_BRANCH: 'main',
    REPO_CACHE_DIR: cache,
    REPO_MAX_FILE_BYTES: CAP,
    REPO_MIRRORS: mirrors.map((m) => m.template),
    REPO_MIRROR_TTL_SECONDS: 600,
  })
}

beforeAll(async () => {
  git = await startGitServer({ username: USER, token: TOKEN })
  remote = git.createRepo('acme', 'drop')
  // 5, 50 and 500 ms, and one that always fails; listed slowest first so order proves ranking.
  mirrors = [
    await startMirror(git.root, 500),
    await startMirror(git.root, 5, true),
    await startMirror(git.root, 50),
    await startMirror(git.root, 5),
  ]
  cacheDir = mkdtempSync(path.join(os.tmpdir(), 'repo-cache-'))
  blobDir = mkdtempSync(path.join(os.tmpdir(), 'repo-blobs-'))
  const config = configFor(cacheDir)
  const built = buildPickupShare({ config, logger: captured.logger, db: deps.db, kv: deps.kv })
  services = built.services
  await services.settings.update({ takeFailuresPerIp: 1_000_000, takeFailuresGlobal: 1_000_000 })
  server = await startTestServer(built.app)
  h.url = server.url
}, 30_000)

afterAll(async () => {
  await server?.close()
  for (const m of mirrors ?? []) await m.close()
  await git?.close()
  rmSync(cacheDir, { recursive: true, force: true })
  rmSync(blobDir, { recursive: true, force: true })
})

async function upload(name: string, data: Buffer, base = h) {
  const grant = await api(base, 'POST', '/api/upload', { store: 'repo', name, size: data.length })
  replies.push(grant)
  expect(grant.status).toBe(200)
  const put = await fetch(new URL(grant.body.upload.url, base.url), {
    method: 'PUT',
    headers: grant.body.upload.headers,
    body: new Uint8Array(data),
  })
  const body = await put.json()
  replies.push({ status: put.status, body, headers: put.headers })
  return {
    grant,
    status: put.status,
    file: {
      name,
      size: data.length,
      type: 'application/octet-stream',
      pathname: grant.body.pathname,
      proof: grant.body.proof,
      store: 'repo',
    },
  }
}

const tipFiles = () =>
  execFileSync('git', ['--git-dir', remote.gitDir, 'ls-tree', '-r', '--name-only', 'main'])
    .toString()
    .split('\n')
    .filter(Boolean)

async function shareAndDownload(file: { pathname: string }, data: Buffer) {
  const shared = await call('POST', '/api/share', { files: [file], maxDownloads: 2 })
  expect(shared.status).toBe(200)
  const taken = await call('POST', '/api/take', { code: shared.body.code })
  expect(taken.status).toBe(200)
  expect(taken.body.manifest.files[0].path).toBe(file.pathname)
  expect(taken.body.manifest.files[0].size).toBe(data.length)
  const res = await fetch(
    `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`,
  )
  const bytes = Buffer.from(await res.arrayBuffer())
  replies.push({ status: res.status, body: '', headers: res.headers })
  return { res, bytes, code: shared.body.code as string }
}

describe('repo store against a real git server (git http-backend on loopback)', () => {
  it('when a file is uploaded, shared, taken and downloaded, then it comes byte-identical through the fastest mirror', async () => {
    const data = randomBytes(300_000)
    const { grant, status, file } = await upload('notes.bin', data)
    expect(grant.body.upload).toMatchObject({ url: '/api/repo/upload', method: 'PUT' })
    expect(grant.body.options.maximumSizeInBytes).toBe(CAP)
    expect(status).toBe(201)
    expect(tipFiles()).toContain(file.pathname)
    for (const m of mirrors) m.hits.length = 0

    const { res, bytes } = await shareAndDownload(file, data)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-length')).toBe(String(data.length))
    expect(res.headers.get('content-disposition')).toContain('notes.bin')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(bytes.equals(data)).toBe(true)

    const gets = (m: MirrorServer) => m.hits.filter((x) => x.method === 'GET')
    const [slow, failing, medium, fast] = mirrors as [MirrorServer, MirrorServer, MirrorServer, MirrorServer]
    expect(gets(fast)).toHaveLength(1)
    // The path on the mirror names the commit, never the branch.
    const commit = execFileSync('git', [
      '--git-dir',
      remote.gitDir,
      'log',
      '-1',
      '--format=%H',
      'main',
      '--',
      file.pathname,
    ])
      .toString()
      .trim()
    expect(gets(fast)[0]!.path).toBe(`/acme/drop/${commit}/${file.pathname}`)
    expect(gets(medium)).toHaveLength(0)
    expect(gets(slow)).toHaveLength(0)
    expect(gets(failing)).toHaveLength(0)
    // Probed with 3 HEAD rounds each.
    expect(fast.hits.filter((x) => x.method === 'HEAD')).toHaveLength(3)
  })

  it('when every mirror fails and the local cache is gone, then the file comes from the git remote itself', async () => {
    const data = randomBytes(150_000)
    const { file } = await upload('fallback.bin', data)
    for (const m of mirrors) m.failing = true
    await deps.kv.del('mirror-rank:repo:acme/drop')
    rmSync(cacheDir, { recursive: true, force: true })
    const before = git.authorizations.length
    const { res, bytes } = await shareAndDownload(file, data)
    expect(res.status).toBe(200)
    expect(bytes.equals(data)).toBe(true)
    expect(git.authorizations.length).toBeGreaterThan(before)
    for (const m of mirrors)
      expect(m.hits.some((x) => x.method === 'GET' && x.path.endsWith(file.pathname))).toBe(false)
    for (const m of mirrors) m.failing = m === mirrors[1]
    await deps.kv.del('mirror-rank:repo:acme/drop')
  })

  it('when the fastest mirror lacks the file, then the next mirror down the ranking serves it', async () => {
    const data = randomBytes(10_000)
    const { file } = await upload('second.bin', data)
    const [slow, , medium, fast] = mirrors as [MirrorServer, MirrorServer, MirrorServer, MirrorServer]
    fast.lagging = true
    for (const m of mirrors) m.hits.length = 0
    try {
      const { bytes } = await shareAndDownload(file, data)
      expect(bytes.equals(data)).toBe(true)
      expect(fast.hits.filter((x) => x.method === 'GET')).toHaveLength(1)
      expect(medium.hits.filter((x) => x.method === 'GET')).toHaveLength(1)
      expect(slow.hits.filter((x) => x.method === 'GET')).toHaveLength(0)
    } finally {
      fast.lagging = false
    }
  })

  it('when uploads run concurrently, also from a second replica, then every file lands in the branch tip', async () => {
    const otherCache = mkdtempSync(path.join(os.tmpdir(), 'repo-cache2-'))
    const config = configFor(otherCache)
    const replica = buildPickupShare({ config, logger: captured.logger, db: deps.db, kv: deps.kv })
    const replicaServer = await startTestServer(replica.app)
    try {
      const files = Array.from({ length: 8 }, (_, i) => ({ name: `c${i}.bin`, data: randomBytes(5000 + i) }))
      const results = await Promise.all(
        files.map((f, i) => upload(f.name, f.data, i % 2 ? { url: replicaServer.url } : h)),
      )
      expect(results.map((r) => r.status)).toEqual(files.map(() => 201))
      const tip = tipFiles()
      for (const r of results) expect(tip).toContain(r.file.pathname)
      const { bytes } = await shareAndDownload(results[1]!.file, files[1]!.data)
      expect(bytes.equals(files[1]!.data)).toBe(true)
    } finally {
      await replicaServer.close()
      rmSync(otherCache, { recursive: true, force: true })
    }
    // Eight commits pushed one after another through git http-backend: a few seconds alone, more
    // than jest's 30 s on a loaded CI machine.
  }, 180_000)

  it('when a file exceeds the per-file cap, then 413 at permission time or while streaming, and nothing is committed', async () => {
    const big = await call('POST', '/api/upload', { store: 'repo', name: 'big.bin', size: CAP + 1 })
    expect(big.status).toBe(413)
    expect(big.body.error.code).toBe('file_too_large')
    const grant = await call('POST', '/api/upload', { store: 'repo', name: 'liar.bin', size: 10 })
    const put = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: grant.body.upload.headers,
      body: new Uint8Array(randomBytes(CAP + 100)),
    })
    expect(put.status).toBe(413)
    expect(tipFiles()).not.toContain(grant.body.pathname)
  })

  it.each([
    ['longer', 1001, 413, 'file_too_large'],
    ['shorter', 999, 400, 'size_mismatch'],
  ])(
    'when a streamed body is %s than declared (%i bytes for 1000), then %i %s and nothing is committed',
    async (_, length, status, code) => {
      const grant = await call('POST', '/api/upload', { store: 'repo', name: 'exact.bin', size: 1000 })
      const data = new Uint8Array(randomBytes(length))
      const put = await fetch(new URL(grant.body.upload.url, h.url), {
        method: 'PUT',
        headers: grant.body.upload.headers,
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < data.length; i += 100) c.enqueue(data.subarray(i, i + 100))
            c.close()
          },
        }),
        duplex: 'half',
      } as RequestInit)
      expect(put.status).toBe(status)
      expect(((await put.json()) as { error: { code: string } }).error.code).toBe(code)
      expect(tipFiles()).not.toContain(grant.body.pathname)
      expect(await deps.db.repoObject.count({ where: { pathname: grant.body.pathname } })).toBe(0)
    },
  )

  it('when a download is resumed with Range, then 206 with exactly those bytes (cut from the verified stream), one download for the transfer', async () => {
    const data = randomBytes(200_000)
    const { file } = await upload('resume.bin', data)
    const shared = await call('POST', '/api/share', { files: [file], maxDownloads: 1 })
    const url = `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`
    const first = await fetch(url, { headers: { range: 'bytes=0-99999' } })
    expect(first.status).toBe(206)
    expect(Buffer.from(await first.arrayBuffer()).equals(data.subarray(0, 100_000))).toBe(true)
    const rest = await fetch(url, { headers: { range: 'bytes=100000-' } })
    expect(rest.status).toBe(206)
    expect(rest.headers.get('content-range')).toBe('bytes 100000-199999/200000')
    expect(Buffer.from(await rest.arrayBuffer()).equals(data.subarray(100_000))).toBe(true)
    expect((await call('POST', '/api/take', { code: shared.body.code })).status).toBe(410)
  })

  it('when a share is deleted, then its file leaves the branch tip', async () => {
    const data = randomBytes(1000)
    const { file } = await upload('gone.bin', data)
    const shared = await call('POST', '/api/share', { files: [file] })
    expect(tipFiles()).toContain(file.pathname)
    await services.shareAdmin.removeShareByCode(shared.body.code)
    expect(tipFiles()).not.toContain(file.pathname)
  })

  it('when an admin adds a second repository with a quota, then uploads go there once the first is off, and its token is never shown', async () => {
    const second = git.createRepo('acme', 'overflow')
    const login = await api(
      h,
      'POST',
      '/api/admin/login',
      { password: 'correct horse battery staple' },
      { origin: h.url, 'x-requested-with': 't' },
    )
    const admin = {
      origin: h.url,
      'x-requested-with': 't',
      cookie: login.headers.get('set-cookie')!.split(';')[0]!,
    }
    const created = await call(
      'POST',
      '/api/admin/stores',
      {
        name: 'overflow',
        kind: 'repo',
        quotaBytes: 50_000,
        settings: { remoteUrl: second.remoteUrl, token: TOKEN, username: USER },
      },
      admin,
    )
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      kind: 'repo',
      credentialsSet: ['token'],
      settings: { remoteUrl: second.remoteUrl },
    })
    expect((await call('POST', '/api/admin/stores', { name: 'repo', enabled: false }, admin)).status).toBe(
      200,
    )
    try {
      const data = randomBytes(20_000)
      const { file, status } = await upload('overflow.bin', data)
      expect(status).toBe(201)
      const tip = execFileSync('git', [
        '--git-dir',
        second.gitDir,
        'ls-tree',
        '-r',
        '--name-only',
        'main',
      ]).toString()
      expect(tip).toContain(file.pathname)
      const { bytes } = await shareAndDownload(file, data)
      expect(bytes.equals(data)).toBe(true)
      // 20 000 used + 40 000 asked > 50 000: refused.
      const full = await call('POST', '/api/upload', { store: 'repo', name: 'more.bin', size: 40_000 })
      expect(full.status).toBe(507)
      const list = await call('GET', '/api/admin/stores', undefined, admin)
      expect(list.body.items.find((i: { name: string }) => i.name === 'overflow')).toMatchObject({
        usedBytes: 20_000,
      })
    } finally {
      await call('POST', '/api/admin/stores', { name: 'repo', enabled: true }, admin)
    }
  })

  it('when everything above ran, then the token never appeared in a response, a log line or the git config', () => {
    expect(git.authorizations.length).toBeGreaterThan(0)
    const basic = Buffer.from(`${USER}:${TOKEN}`).toString('base64')
    const headerText = (hs: Headers) => {
      const all: string[] = []
      hs.forEach((v, k) => all.push(`${k}: ${v}`))
      return all
    }
    const responses = JSON.stringify(replies.map((r) => [r.body, headerText(r.headers)]))
    const logs = JSON.stringify(captured.lines)
    for (const secret of [TOKEN, basic]) {
      expect(responses).not.toContain(secret)
      expect(logs).not.toContain(secret)
    }
    expect(captured.lines.length).toBeGreaterThan(0)
    const gitConfig = execFileSync('git', [
      '--git-dir',
      path.join(cacheDir, 'repo'),
      'config',
      '--list',
    ]).toString()
    expect(gitConfig).not.toContain(TOKEN)
    expect(gitConfig).not.toContain(basic)
  })
})
