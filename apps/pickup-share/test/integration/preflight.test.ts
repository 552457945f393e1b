import { randomBytes } from 'node:crypto'
import { unlinkSync } from 'node:fs'
import path from 'node:path'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// What the pages ask before a byte moves (issue 20 items 3 and 5): a HEAD of a download (or of
// download all) looks at the store, and an authorization code is checked before an upload.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

async function twoFileShare() {
  const files = []
  for (const name of ['a.bin', 'b.bin']) {
    const { file } = await uploadFile(h, { name, data: randomBytes(2_000) })
    files.push(file)
  }
  const { code } = (await api(h, 'POST', '/api/share', { files, maxDownloads: 2 })).body
  return { code: code as string, files }
}

describe('HEAD is a preflight of the store', () => {
  it('when a file is missing from the store, then HEAD of it and of download all answer 502 storage_failed and nothing is spent', async () => {
    const s = await twoFileShare()
    const one = `${h.url}/api/download?code=${s.code}&path=${encodeURIComponent(s.files[1]!.pathname)}`
    expect((await fetch(one, { method: 'HEAD' })).status).toBe(200)
    expect((await fetch(`${h.url}/api/download-all?code=${s.code}`, { method: 'HEAD' })).status).toBe(200)
    unlinkSync(path.join(h.config.BLOB_DIR, s.files[1]!.pathname))
    expect((await fetch(one, { method: 'HEAD' })).status).toBe(502)
    expect((await fetch(`${h.url}/api/download-all?code=${s.code}`, { method: 'HEAD' })).status).toBe(502)
    expect((await api(h, 'POST', '/api/take', { code: s.code })).body.remaining).toBe(2)
  })
})

describe('POST /api/auth-code/check', () => {
  it('when unlimited mode is off, then 403 unlimited_disabled', async () => {
    const res = await api(h, 'POST', '/api/auth-code/check', { authCode: 'psac_x', limitSize: true })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('unlimited_disabled')
  })

  it('when a code is wrong, of another scope or right, then 403 with the reason, or 200 without using it up', async () => {
    await h.services.settings.update({ unlimitedEnabled: true })
    try {
      const wrong = await api(h, 'POST', '/api/auth-code/check', { authCode: 'psac_wrong', limitSize: true })
      expect(wrong.status).toBe(403)
      expect(wrong.body.error.code).toBe('auth_code_invalid')
      const sizeOnly = await h.services.authCodes.issue({ scope: 'size', expiresInHours: 1 })
      const scope = await api(h, 'POST', '/api/auth-code/check', {
        authCode: sizeOnly.code,
        unlimitedDownloads: true,
      })
      expect(scope.status).toBe(403)
      expect(scope.body.error.code).toBe('auth_code_scope')
      const both = await h.services.authCodes.issue({ scope: 'both', expiresInHours: 1 })
      for (let i = 0; i < 2; i++) {
        const ok = await api(h, 'POST', '/api/auth-code/check', {
          authCode: both.code,
          unlimitedDownloads: true,
          limitSize: true,
        })
        expect(ok.status).toBe(200)
        expect(ok.body).toMatchObject({ ok: true, scope: 'both' })
      }
      // Still unused: a share can take it.
      const { file } = await uploadFile(h, { name: 'u.bin', data: randomBytes(10) })
      const shared = await api(h, 'POST', '/api/share', {
        files: [file],
        maxDownloads: null,
        authCode: both.code,
      })
      expect(shared.status).toBe(200)
      const used = await api(h, 'POST', '/api/auth-code/check', {
        authCode: both.code,
        unlimitedDownloads: true,
      })
      expect(used.body.error.code).toBe('auth_code_used')
    } finally {
      await h.services.settings.update({ unlimitedEnabled: false })
    }
  })

  it('when neither unlimited downloads nor no size limit is asked, then 400', async () => {
    expect((await api(h, 'POST', '/api/auth-code/check', { authCode: 'psac_x' })).status).toBe(400)
  })
})
