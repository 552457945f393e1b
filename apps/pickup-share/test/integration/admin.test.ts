import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fixedClock } from '@quartet/core/clock'
import {
  ADMIN_HEADERS,
  ADMIN_PASSWORD,
  adminLogin,
  api,
  type Harness,
  startHarness,
  testDeps,
  uploadFile,
} from '../support/harness.ts'

const deps = testDeps()
const clock = fixedClock(new Date())
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { clock })
})
afterAll(async () => {
  await h.close()
})

const ROUTES: Array<[string, string, unknown?]> = [
  ['GET', '/api/admin/shares', undefined],
  ['DELETE', '/api/admin/shares', { code: '12345678' }],
  ['POST', '/api/admin/shares', { action: 'cleanup' }],
  ['GET', '/api/admin/settings', undefined],
  ['PUT', '/api/admin/settings', { codeLength: 9 }],
  ['GET', '/api/admin/authcodes', undefined],
  ['POST', '/api/admin/authcodes', { expiresInHours: 1, scope: 'both' }],
  ['DELETE', '/api/admin/authcodes', { id: '00000000-0000-4000-8000-000000000000' }],
  ['GET', '/api/admin/audit', undefined],
  ['POST', '/api/admin/logout', undefined],
]

describe('admin: sessions and CSRF', () => {
  it.each(ROUTES)('when %s %s has no session, then 401 and nothing changes', async (method, p, body) => {
    const res = await api(h, method, p, body, ADMIN_HEADERS(h))
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe('session_required')
    expect(
      (await api(h, method, p, body, { ...ADMIN_HEADERS(h), cookie: 'qps_session=forged' })).status,
    ).toBe(401)
  })

  it('when logging in, then the cookie is HttpOnly, SameSite=Strict, Path=/ and the id rotates each login', async () => {
    const first = await api(h, 'POST', '/api/admin/login', { password: ADMIN_PASSWORD }, ADMIN_HEADERS(h))
    expect(first.status).toBe(200)
    const cookie = first.headers.get('set-cookie')!
    expect(cookie).toMatch(
      /^qps_session=[0-9a-f]{64}; Max-Age=43200; Path=\/; Expires=.*; HttpOnly; SameSite=Strict$/,
    )
    const old = cookie.split(';')[0]!
    const second = await api(
      h,
      'POST',
      '/api/admin/login',
      { password: ADMIN_PASSWORD },
      { ...ADMIN_HEADERS(h), cookie: old },
    )
    const fresh = second.headers.get('set-cookie')!.split(';')[0]!
    expect(fresh).not.toBe(old)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, { cookie: old })).status).toBe(401)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, { cookie: fresh })).status).toBe(200)
  })

  it('when the password is wrong, then 401 and the failure is in the audit log', async () => {
    const res = await api(
      h,
      'POST',
      '/api/admin/login',
      { password: 'nope' },
      { ...ADMIN_HEADERS(h), 'x-forwarded-for': '203.0.113.9' },
    )
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe('invalid_password')
    const row = await deps.db.auditLog.findFirst({
      where: { action: 'admin.login_failed', ip: '203.0.113.9' },
    })
    expect(row).not.toBeNull()
  })

  it('when one address tries more than 5 logins in 15 minutes, then 429 with Retry-After', async () => {
    await h.services.settings.update({ loginAttemptsPerIp: 5 })
    const headers = { ...ADMIN_HEADERS(h), 'x-forwarded-for': '198.51.100.77' }
    for (let i = 0; i < 5; i++)
      expect((await api(h, 'POST', '/api/admin/login', { password: 'x' }, headers)).status).toBe(401)
    const res = await api(h, 'POST', '/api/admin/login', { password: ADMIN_PASSWORD }, headers)
    expect(res.status).toBe(429)
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
    await h.services.settings.update({ loginAttemptsPerIp: 1000 })
  })

  it.each([
    ['no X-Requested-With', { origin: 'SELF' }],
    ['a foreign Origin', { origin: 'https://evil.example', 'x-requested-with': 'fetch' }],
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site', 'x-requested-with': 'fetch' }],
    ['no Origin and no Sec-Fetch-Site', { 'x-requested-with': 'fetch' }],
  ])('when a state-changing request has %s, then 403 csrf_rejected (login included)', async (_what, raw) => {
    const headers = Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, v === 'SELF' ? h.url : v]))
    const cookie = (await adminLogin(h)).cookie!
    const put = await api(h, 'PUT', '/api/admin/settings', { codeLength: 10 }, { ...headers, cookie })
    expect(put.status).toBe(403)
    expect(put.body.error.code).toBe('csrf_rejected')
    const login = await api(h, 'POST', '/api/admin/login', { password: ADMIN_PASSWORD }, headers)
    expect(login.status).toBe(403)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, { cookie })).body.codeLength).not.toBe(10)
  })

  it('when Sec-Fetch-Site is same-origin, then the request passes', async () => {
    const { cookie } = await adminLogin(h)
    const res = await api(
      h,
      'PUT',
      '/api/admin/settings',
      { codeLength: 8 },
      { cookie: cookie!, 'sec-fetch-site': 'same-origin', 'x-requested-with': 'x' },
    )
    expect(res.status).toBe(200)
  })

  it('when a session is idle 30 minutes, then it has expired; when active, it lasts at most 12 hours', async () => {
    const a = await adminLogin(h)
    clock.advance(29 * 60_000)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, a)).status).toBe(200)
    clock.advance(29 * 60_000)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, a)).status).toBe(200)
    clock.advance(31 * 60_000)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, a)).status).toBe(401)

    const b = await adminLogin(h)
    for (let i = 0; i < 25; i++) {
      clock.advance(29 * 60_000)
      const status = (await api(h, 'GET', '/api/admin/settings', undefined, b)).status
      if (i < 24) expect(status).toBe(200)
      else expect(status).toBe(401) // 25 × 29 min > 12 h
    }
  })

  it('when logging out, then the session no longer works', async () => {
    const a = await adminLogin(h)
    expect((await api(h, 'POST', '/api/admin/logout', undefined, a)).status).toBe(200)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, a)).status).toBe(401)
  })
})

describe('admin: settings', () => {
  it('when settings are read, then every field has its default', async () => {
    const a = await adminLogin(h)
    const res = await api(h, 'GET', '/api/admin/settings', undefined, a)
    expect(res.body).toMatchObject({
      defaultExpireDays: 7,
      maxExpireDays: 30,
      defaultMaxDownloads: 10,
      maxDownloadsCap: 100,
      maxFileSizeBytes: 1048576000,
      unlimitedEnabled: false,
      loginWindowSeconds: 900,
      takeFailureWindowSeconds: 600,
    })
  })

  it.each([
    [{ codeLength: 5 }],
    [{ codeLength: 13 }],
    [{ defaultExpireDays: 40 }],
    [{ maxDownloadsCap: 5 }],
    [{ unlimitedEnabled: 'yes' }],
    [{ noSuchSetting: 1 }],
    [{ maxFileSizeBytes: -1 }],
  ])('when the change %j is invalid, then 400 and nothing changes', async (body) => {
    const a = await adminLogin(h)
    const before = (await api(h, 'GET', '/api/admin/settings', undefined, a)).body
    const res = await api(h, 'PUT', '/api/admin/settings', body, a)
    expect(res.status).toBe(400)
    expect(['bad_request', 'settings_invalid']).toContain(res.body.error.code)
    expect((await api(h, 'GET', '/api/admin/settings', undefined, a)).body).toEqual(before)
  })

  it('when settings change, then new shares follow them and the audit log records it', async () => {
    const a = await adminLogin(h)
    const res = await api(h, 'PUT', '/api/admin/settings', { codeLength: 12, defaultMaxDownloads: 4 }, a)
    expect(res.status).toBe(200)
    expect(res.body.codeLength).toBe(12)
    const { file } = await uploadFile(h, { name: 'c.txt', data: Buffer.from('c') })
    const shared = await api(h, 'POST', '/api/share', { files: [file] })
    expect(shared.body.code).toMatch(/^\d{12}$/)
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).body.remaining).toBe(4)
    const audit = await api(h, 'GET', '/api/admin/audit?action=settings.update', undefined, a)
    expect(audit.body.items[0]).toMatchObject({
      action: 'settings.update',
      details: { changed: ['codeLength', 'defaultMaxDownloads'] },
    })
    await api(h, 'PUT', '/api/admin/settings', { codeLength: 8, defaultMaxDownloads: 10 }, a)
  })
})

describe('admin: shares', () => {
  it('when listing, then shares come paginated, filtered and sorted', async () => {
    const a = await adminLogin(h)
    const codes: string[] = []
    for (const name of ['alpha-report.txt', 'beta.txt', 'gamma.txt']) {
      const { file } = await uploadFile(h, { name, data: Buffer.from(name) })
      codes.push((await api(h, 'POST', '/api/share', { files: [file] })).body.code)
    }
    const page = await api(
      h,
      'GET',
      '/api/admin/shares?pageSize=2&page=1&sort=createdAt&order=desc',
      undefined,
      a,
    )
    expect(page.status).toBe(200)
    expect(page.body.items).toHaveLength(2)
    expect(page.body.total).toBeGreaterThanOrEqual(3)
    const found = await api(h, 'GET', '/api/admin/shares?q=alpha-rep', undefined, a)
    expect(found.body.items.map((i: { code: string }) => i.code)).toEqual([codes[0]])
    expect(found.body.items[0]).toMatchObject({
      remaining: 10,
      totalBytes: 16,
      files: [{ name: 'alpha-report.txt' }],
    })
    expect((await api(h, 'GET', '/api/admin/shares?pageSize=0', undefined, a)).status).toBe(400)
    expect((await api(h, 'GET', '/api/admin/shares?sort=size', undefined, a)).status).toBe(400)
  })

  it('when an admin deletes a share, then take gives 404, its files are gone and the audit log has it', async () => {
    const a = await adminLogin(h)
    const { file } = await uploadFile(h, { name: 'del.txt', data: Buffer.from('del') })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file] })).body
    const res = await api(h, 'DELETE', '/api/admin/shares', { code }, a)
    expect(res.status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { code })).status).toBe(404)
    expect(existsSync(path.join(h.config.BLOB_DIR, file.pathname))).toBe(false)
    expect(
      await deps.db.auditLog.findFirst({ where: { action: 'share.delete', target: code } }),
    ).not.toBeNull()
    expect((await api(h, 'DELETE', '/api/admin/shares', { code }, a)).status).toBe(404)
  })

  it('when cleanup runs, then unshared uploads older than the orphan age are removed and shared ones stay', async () => {
    const a = await adminLogin(h)
    const orphan = await uploadFile(h, { name: 'orphan.bin', data: randomBytes(1234) })
    const kept = await uploadFile(h, { name: 'kept.bin', data: randomBytes(10) })
    await api(h, 'POST', '/api/share', { files: [kept.file], expireDays: 30 })
    const fresh = await api(h, 'POST', '/api/admin/shares', { action: 'cleanup' }, a)
    expect(fresh.body).toEqual({ removedFiles: 0, freedBytes: 0, partialFiles: 0, partialBytes: 0 })
    clock.advance(25 * 3_600_000)
    const a2 = await adminLogin(h)
    const res = await api(h, 'POST', '/api/admin/shares', { action: 'cleanup' }, a2)
    expect(res.status).toBe(200)
    expect(res.body.removedFiles).toBeGreaterThanOrEqual(1)
    expect(res.body.freedBytes).toBeGreaterThanOrEqual(1234)
    expect(existsSync(path.join(h.config.BLOB_DIR, orphan.file.pathname))).toBe(false)
    expect(existsSync(path.join(h.config.BLOB_DIR, kept.file.pathname))).toBe(true)
    expect(
      await deps.db.auditLog.findFirst({ where: { action: 'shares.cleanup' }, orderBy: { id: 'desc' } }),
    ).toMatchObject({
      details: res.body,
    })
    expect((await api(h, 'POST', '/api/admin/shares', { action: 'purge' }, a2)).status).toBe(400)
  })

  it('when the sweeper runs, then expired shares and their files are removed', async () => {
    const { file } = await uploadFile(h, { name: 'exp.txt', data: Buffer.from('exp') })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file], expireDays: 1 })).body
    clock.advance(2 * 86_400_000)
    expect((await api(h, 'POST', '/api/take', { code })).status).toBe(410)
    const result = await h.services.cleanup.sweep()
    expect(result.endedShares).toBeGreaterThanOrEqual(1)
    expect(await deps.db.share.findUnique({ where: { code } })).toBeNull()
    expect(existsSync(path.join(h.config.BLOB_DIR, file.pathname))).toBe(false)
  })

  it("when an exhausted share's last stream never reported back, then the sweeper removes it after an hour", async () => {
    const { file } = await uploadFile(h, { name: 'lost.txt', data: Buffer.from('lost') })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })).body
    const share = await deps.db.share.findUniqueOrThrow({ where: { code } })
    // A reservation whose stream died with its process: never finished.
    expect(await h.services.gate.reserve(share.id, share.expiresAt)).toEqual({ left: 0, tracked: true })
    expect((await api(h, 'POST', '/api/take', { code })).status).toBe(410)
    await h.services.cleanup.sweep()
    expect(await deps.db.share.findUnique({ where: { code } })).not.toBeNull()
    clock.advance(2 * 3_600_000)
    await h.services.cleanup.sweep()
    expect(await deps.db.share.findUnique({ where: { code } })).toBeNull()
    expect(existsSync(path.join(h.config.BLOB_DIR, file.pathname))).toBe(false)
  })
})
