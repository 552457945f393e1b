import { hashToken } from '@quartet/core/auth'
import { fixedClock } from '@quartet/core/clock'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
const clock = fixedClock(new Date())
let h: Harness
let admin: Record<string, string>
beforeAll(async () => {
  h = await startHarness(deps, { clock })
  admin = await adminLogin(h)
  await api(h, 'PUT', '/api/admin/settings', { unlimitedEnabled: true }, admin)
})
afterAll(async () => {
  await h.close()
})

async function newCode(scope = 'both', expiresInHours = 1) {
  const res = await api(
    h,
    'POST',
    '/api/admin/authcodes',
    { scope, expiresInHours, note: 'for a test' },
    admin,
  )
  expect(res.status).toBe(201)
  return res.body as { id: string; code: string }
}

async function freshFile(name = 'u.bin') {
  return (await uploadFile(h, { name, data: Buffer.from('unlimited') })).file
}

describe('authorization codes', () => {
  it('when an admin issues a code, then it is shown once, stored hashed and listed in the issuance log', async () => {
    const { id, code } = await newCode('downloads')
    expect(code).toMatch(/^psac_[0-9a-f]{32}$/)
    const row = await deps.db.authCode.findUniqueOrThrow({ where: { id } })
    expect(row.codeHash).toBe(hashToken(code))
    expect(JSON.stringify(row)).not.toContain(code)
    const list = await api(h, 'GET', '/api/admin/authcodes', undefined, admin)
    const entry = list.body.items.find((i: { id: string }) => i.id === id)
    expect(entry).toMatchObject({
      scope: 'downloads',
      status: 'unused',
      note: 'for a test',
      usedAt: null,
      usedByShare: null,
    })
    expect(JSON.stringify(list.body)).not.toContain(code)
    expect(
      await deps.db.auditLog.findFirst({ where: { action: 'authcode.create', target: id } }),
    ).not.toBeNull()
  })

  it('when a valid code comes with maxDownloads null, then the share is unlimited and the code is used by it', async () => {
    const { id, code } = await newCode()
    const res = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: code,
    })
    expect(res.status).toBe(200)
    const taken = await api(h, 'POST', '/api/take', { code: res.body.code })
    expect(taken.body.remaining).toBeNull()
    const list = await api(h, 'GET', '/api/admin/authcodes', undefined, admin)
    expect(list.body.items.find((i: { id: string }) => i.id === id)).toMatchObject({
      status: 'used',
      usedByShare: res.body.code,
    })
    for (let i = 0; i < 3; i++) {
      const dl = await fetch(
        `${h.url}/api/download?code=${res.body.code}&path=${encodeURIComponent(taken.body.manifest.files[0].path)}`,
      )
      expect(dl.status).toBe(200)
      await dl.arrayBuffer()
    }
  })

  it('when a code grants unlimited size, then /api/upload returns maximumSizeInBytes null and share accepts it', async () => {
    const { code } = await newCode('size')
    const { file, grant } = await uploadFile(
      h,
      { name: 'huge.bin', data: Buffer.from('pretend huge') },
      { limitSize: true, authCode: code },
    )
    expect(grant.body.options.maximumSizeInBytes).toBeNull()
    const withoutCode = await api(h, 'POST', '/api/share', { files: [file] })
    expect(withoutCode.status).toBe(403)
    const res = await api(h, 'POST', '/api/share', { files: [file], limitSize: true, authCode: code })
    expect(res.status).toBe(200)
  })

  it('when the code is missing, then 403 auth_code_missing', async () => {
    const res = await api(h, 'POST', '/api/share', { files: [await freshFile()], maxDownloads: null })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('auth_code_missing')
  })

  it('when the code is invalid, then 403 auth_code_invalid', async () => {
    const res = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: 'psac_nope',
    })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('auth_code_invalid')
  })

  it('when the code was already used, then 403 auth_code_used', async () => {
    const { code } = await newCode()
    expect(
      (await api(h, 'POST', '/api/share', { files: [await freshFile()], maxDownloads: null, authCode: code }))
        .status,
    ).toBe(200)
    const res = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: code,
    })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('auth_code_used')
  })

  it('when the code has expired, then 403 auth_code_expired', async () => {
    const { code } = await newCode('both', 1)
    const file = await freshFile()
    clock.advance(61 * 60_000)
    const res = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: null, authCode: code })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('auth_code_expired')
    admin = await adminLogin(h)
  })

  it('when the code was revoked or lacks the scope, then 403 says so', async () => {
    const revoked = await newCode()
    expect((await api(h, 'DELETE', '/api/admin/authcodes', { id: revoked.id }, admin)).status).toBe(200)
    expect((await api(h, 'DELETE', '/api/admin/authcodes', { id: revoked.id }, admin)).status).toBe(409)
    const r1 = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: revoked.code,
    })
    expect(r1.body.error.code).toBe('auth_code_revoked')
    const sizeOnly = await newCode('size')
    const r2 = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: sizeOnly.code,
    })
    expect(r2.status).toBe(403)
    expect(r2.body.error.code).toBe('auth_code_scope')
    expect(
      await deps.db.auditLog.findFirst({ where: { action: 'authcode.revoke', target: revoked.id } }),
    ).not.toBeNull()
  })

  it('when ten shares race on one code, then exactly one succeeds and the others get 403 auth_code_used', async () => {
    const { code } = await newCode()
    const files = await Promise.all(Array.from({ length: 10 }, (_, i) => freshFile(`r${i}.bin`)))
    const results = await Promise.all(
      files.map((f) => api(h, 'POST', '/api/share', { files: [f], maxDownloads: null, authCode: code })),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    const refused = results.filter((r) => r.status !== 200)
    expect(refused.map((r) => r.body.error.code)).toEqual(Array(9).fill('auth_code_used'))
    // The losers' uploads were released, not swallowed: they can still be shared normally.
    const loserFile = files[results.findIndex((r) => r.status !== 200)]!
    expect((await api(h, 'POST', '/api/share', { files: [loserFile] })).status).toBe(200)
  })

  it('when unlimited mode is switched off, then even a valid code gets 403 unlimited_disabled', async () => {
    const { code } = await newCode()
    await api(h, 'PUT', '/api/admin/settings', { unlimitedEnabled: false }, admin)
    const res = await api(h, 'POST', '/api/share', {
      files: [await freshFile()],
      maxDownloads: null,
      authCode: code,
    })
    expect(res.body.error.code).toBe('unlimited_disabled')
    await api(h, 'PUT', '/api/admin/settings', { unlimitedEnabled: true }, admin)
  })

  it('when the create request is invalid, then 400 and no code is issued', async () => {
    const before = await deps.db.authCode.count()
    for (const body of [
      { scope: 'all', expiresInHours: 1 },
      { scope: 'both', expiresInHours: 0 },
      { scope: 'both' },
    ]) {
      expect((await api(h, 'POST', '/api/admin/authcodes', body, admin)).status).toBe(400)
    }
    expect(await deps.db.authCode.count()).toBe(before)
  })
})
