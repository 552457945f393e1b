import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { startGitServer, type GitServer } from '../support/git-server.ts'
import { ADMIN_HEADERS, adminLogin, api, type Harness, startHarness, testDeps } from '../support/harness.ts'

// s3rver speaks the S3 protocol on loopback (access key and secret S3RVER); it ships no types.
const S3rver = require('s3rver') as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

jest.setTimeout(60_000)

const deps = testDeps()
const BUCKET = 'quartet-probe-bucket'
const TOKEN = 'ghp-test-token-never-echoed-7c1f'
let h: Harness
let s3: InstanceType<typeof S3rver>
let s3Dir: string
let endpoint: string
let git: GitServer
let admin: Record<string, string>

/**
 * A loopback port nothing listens on: port 1 (tcpmux), which nothing here serves. A port bound and
 * released again could be handed to another server at once (the suite's Node 20 and 24 runs go
 * side by side), which then answered the probe.
 */
async function closedPort(): Promise<number> {
  return 1
}

beforeAll(async () => {
  s3Dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-probe-'))
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET }],
  })
  endpoint = `http://127.0.0.1:${(await s3.run()).port}`
  git = await startGitServer({ username: 'x-access-token', token: TOKEN })
  h = await startHarness(deps, {
    config: { REPO_CACHE_DIR: mkdtempSync(path.join(os.tmpdir(), 'repo-cache-')) },
  })
  admin = await adminLogin(h)
})
afterAll(async () => {
  await h?.close()
  await git?.close()
  await s3?.close()
  if (s3Dir) rmSync(s3Dir, { recursive: true, force: true })
})

const probe = (body: unknown, cookie: Record<string, string> | undefined = admin) =>
  api(h, 'POST', '/api/admin/stores/test', body, cookie)
const bucket = (overrides: Record<string, unknown> = {}) => ({
  endpoint,
  bucket: BUCKET,
  accessKey: 'S3RVER',
  secretKey: 'S3RVER',
  ...overrides,
})
const s3Objects = () =>
  existsSync(path.join(s3Dir, BUCKET))
    ? readdirSync(path.join(s3Dir, BUCKET)).filter((n) => n.startsWith('pickup-share-probe'))
    : []

describe('POST /api/admin/stores/test (connection test, nothing saved)', () => {
  it('when it is called without a session, with neither name nor kind, with bad settings or an unknown name, then a 4xx in the envelope', async () => {
    expect((await probe({ kind: 'blob' }, {})).status).toBe(403) // no X-Requested-With
    expect((await probe({ kind: 'blob' }, ADMIN_HEADERS(h))).status).toBe(401)

    const neither = await probe({})
    expect(neither.status).toBe(400)
    expect(neither.body.error.code).toBe('bad_request')

    const badUrl = await probe({ kind: 'bucket', settings: bucket({ endpoint: 'ftp://example' }) })
    expect(badUrl.status).toBe(400)
    expect(badUrl.body.error.message).toMatch(/endpoint/)

    const noKeys = await probe({ kind: 'bucket', settings: { endpoint, bucket: BUCKET } })
    expect(noKeys.status).toBe(400)
    expect(noKeys.body.error.message).toMatch(/accessKey and secretKey are required/)

    const unknown = await probe({ name: 'no-such-store' })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.code).toBe('store_not_found')

    const builtinSettings = await probe({ name: 'blob', settings: {} })
    expect(builtinSettings.status).toBe(409)
    expect(builtinSettings.body.error.code).toBe('store_builtin')

    const extra = await probe({ kind: 'blob', surprise: 1 })
    expect(extra.status).toBe(400)
  })

  it('when a new blob folder or the built-in blob is tested, then ok, and neither a probe file nor a folder is left behind', async () => {
    const fresh = await probe({ kind: 'blob', settings: {} })
    expect(fresh.status).toBe(200)
    expect(fresh.body).toMatchObject({ ok: true })
    expect(typeof fresh.body.ms).toBe('number')
    const instancesDir = path.join(h.config.BLOB_DIR, '.instances')
    const left = existsSync(instancesDir)
      ? readdirSync(instancesDir).filter((n) => n.startsWith('probe-'))
      : []
    expect(left).toEqual([])

    const builtin = await probe({ name: 'blob' })
    expect(builtin.body).toMatchObject({ ok: true })
    expect(readdirSync(h.config.BLOB_DIR).filter((n) => n.startsWith('pickup-share-probe'))).toEqual([])
  })

  it('when a bucket is tested with right keys, wrong keys, a missing bucket or a closed port, then ok or the failed step in words, never the secret', async () => {
    const good = await probe({ kind: 'bucket', settings: bucket() })
    expect(good.body).toMatchObject({ ok: true })
    expect(s3Objects()).toEqual([])

    const wrongKey = await probe({
      kind: 'bucket',
      settings: bucket({ accessKey: 'NOT-A-KEY', secretKey: 'wrong-secret-4411' }),
    })
    expect(wrongKey.status).toBe(200)
    expect(wrongKey.body).toMatchObject({ ok: false, step: 'write', reason: 'credentials' })
    expect(wrongKey.body.message).toMatch(/refused the access key or secret key/)
    expect(JSON.stringify(wrongKey.body)).not.toContain('wrong-secret-4411')

    const missing = await probe({ kind: 'bucket', settings: bucket({ bucket: 'no-such-bucket' }) })
    expect(missing.body).toMatchObject({ ok: false, step: 'write', reason: 'no_bucket' })
    expect(missing.body.message).toMatch(/bucket does not exist/)

    const closed = await probe({
      kind: 'bucket',
      settings: bucket({ endpoint: `http://127.0.0.1:${await closedPort()}` }),
    })
    expect(closed.body).toMatchObject({ ok: false, step: 'write', reason: 'unreachable' })
    expect(closed.body.message).toMatch(/could not connect to the server \(ECONNREFUSED\)/)
  })

  it('when an existing bucket instance is tested with settings but no keys, then its stored keys are used', async () => {
    const created = await api(
      h,
      'POST',
      '/api/admin/stores',
      { name: 'probe-bucket', kind: 'bucket', settings: bucket() },
      admin,
    )
    expect(created.status).toBe(201)
    expect(JSON.stringify(created.body)).not.toContain('"S3RVER"')
    const asIs = await probe({ name: 'probe-bucket' })
    expect(asIs.body).toMatchObject({ ok: true })
    const { accessKey: _a, secretKey: _s, ...withoutKeys } = bucket()
    const changed = await probe({ name: 'probe-bucket', settings: withoutKeys })
    expect(changed.body).toMatchObject({ ok: true })
    const kindClash = await probe({ name: 'probe-bucket', kind: 'blob' })
    expect(kindClash.status).toBe(400)
    expect((await api(h, 'DELETE', '/api/admin/stores', { name: 'probe-bucket' }, admin)).status).toBe(200)
  })

  it('when a git remote is tested, then the right token lists it (a missing branch is a note), a wrong token or address fails in words without the token', async () => {
    const { remoteUrl } = git.createRepo('acme', 'drop')
    const commitsBefore = git.authorizations.length
    const good = await probe({ kind: 'repo', settings: { remoteUrl, token: TOKEN } })
    expect(good.body).toMatchObject({ ok: true, noteCode: 'branch_missing' })
    expect(good.body.note).toMatch(/branch main does not exist yet/)
    expect(git.authorizations.length).toBeGreaterThan(commitsBefore)

    const wrong = await probe({ kind: 'repo', settings: { remoteUrl, token: 'not-the-token-9d2e' } })
    expect(wrong.body).toMatchObject({ ok: false, step: 'connect', reason: 'auth' })
    expect(wrong.body.message).toMatch(/authentication failed/)
    expect(JSON.stringify(wrong.body)).not.toContain('not-the-token-9d2e')

    const nowhere = await probe({
      kind: 'repo',
      settings: { remoteUrl: `http://127.0.0.1:${await closedPort()}/a/b.git`, token: TOKEN },
    })
    expect(nowhere.body).toMatchObject({ ok: false, step: 'connect', reason: 'unreachable' })
    expect(nowhere.body.message).toMatch(/could not be reached/)

    // The throwaway drivers left no cache folder.
    expect(readdirSync(h.config.REPO_CACHE_DIR!).filter((n) => n.startsWith('probe-'))).toEqual([])
  })
})
