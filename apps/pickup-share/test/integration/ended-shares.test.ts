import { fixedClock } from '@quartet/core/clock'
import { MemoryKeyValueStore } from '@quartet/core/kv'
import { ENDED_SHARE_KEPT_MS } from '../../src/domain/share-removal.ts'
import {
  ADMIN_PASSWORD,
  adminLogin,
  api,
  type Harness,
  startHarness,
  testDeps,
  uploadFile,
} from '../support/harness.ts'

// Issue 20 item 4: opening a used-up or expired share is not a wrong guess. It answers 410 with
// its own code (share_used_up, share_expired with the date) and spends none of the address's
// guessing budget — also after the share's rows are gone (ended_share keeps the code and link
// for ENDED_SHARE_KEPT_MS).
const deps = testDeps()
const clock = fixedClock(new Date())
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { clock, strictGuessLimits: true, kv: new MemoryKeyValueStore() })
  await h.services.settings.update({ takeFailuresPerIp: 3, takeFailuresGlobal: 1_000_000 })
})
afterAll(async () => {
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })
const wrongCode = (i: number) => String(200_000_000_000 + i)

async function newShare(maxDownloads: number, expireDays = 7) {
  const { file } = await uploadFile(h, { name: 'e.txt', data: Buffer.from('ended') })
  const res = await api(h, 'POST', '/api/share', { files: [file], maxDownloads, expireDays })
  expect(res.status).toBe(200)
  const { code, token } = res.body as { code: string; token: string }
  const url = (by: string) => `${h.url}/api/download?${by}&path=${encodeURIComponent(file.pathname)}`
  return { code, token, file, url }
}

/** Three wrong codes pass (404), the fourth is refused (429): the address's budget was whole. */
async function expectWholeBudget(ip: string) {
  for (let i = 0; i < 3; i++)
    expect((await api(h, 'POST', '/api/take', { code: wrongCode(i) }, from(ip))).status).toBe(404)
  expect((await api(h, 'POST', '/api/take', { code: wrongCode(9) }, from(ip))).status).toBe(429)
}

describe('used-up and expired shares are not wrong guesses', () => {
  it('when an address opens a used-up share 10 times (take, download, download all), then each is 410 share_used_up and its guessing budget is untouched', async () => {
    const s = await newShare(1)
    expect((await fetch(s.url(`code=${s.code}`), { headers: from('198.51.100.1') })).status).toBe(200)
    const ip = '198.51.100.2'
    for (let i = 0; i < 4; i++) {
      const taken = await api(h, 'POST', '/api/take', { code: s.code }, from(ip))
      expect(taken.status).toBe(410)
      expect(taken.body.error.code).toBe('share_used_up')
    }
    for (let i = 0; i < 3; i++) {
      const dl = await fetch(s.url(`code=${s.code}`), { headers: from(ip) })
      expect(dl.status).toBe(410)
      expect(((await dl.json()) as { error: { code: string } }).error.code).toBe('share_used_up')
      const all = await fetch(`${h.url}/api/download-all?code=${s.code}`, { headers: from(ip) })
      expect(all.status).toBe(410)
    }
    // By its link: the same answer.
    const byLink = await api(h, 'POST', '/api/take', { token: s.token }, from(ip))
    expect(byLink.status).toBe(410)
    expect(byLink.body.error.code).toBe('share_used_up')
    await expectWholeBudget(ip)
  })

  it('when a share has expired, then its code and link answer 410 share_expired with the date, before and after the sweeper removed it, spending nothing', async () => {
    const s = await newShare(5, 1)
    const expiresAt = (await api(h, 'POST', '/api/take', { code: s.code })).body.manifest.expiresAt
    clock.advance(2 * 86_400_000)
    const ip = '198.51.100.3'
    const before = await api(h, 'POST', '/api/take', { code: s.code }, from(ip))
    expect(before.status).toBe(410)
    expect(before.body.error).toMatchObject({
      code: 'share_expired',
      message: `this share expired on ${expiresAt}`,
      details: { reason: 'expired', expiresAt },
    })
    await h.services.cleanup.sweep()
    expect(await deps.db.share.findUnique({ where: { code: s.code } })).toBeNull()
    for (let i = 0; i < 4; i++) {
      const after = await api(h, 'POST', '/api/take', { code: s.code }, from(ip))
      expect(after.status).toBe(410)
      expect(after.body.error.details.expiresAt).toBe(expiresAt)
    }
    const dl = await fetch(s.url(`code=${s.code}`), { headers: from(ip) })
    expect(dl.status).toBe(410)
    expect(((await dl.json()) as { error: { code: string } }).error.code).toBe('share_expired')
    const link = await fetch(s.url(`token=${s.token}`))
    expect(link.status).toBe(410)
    await expectWholeBudget(ip)
  })

  it('when an ended share has been remembered long enough, then the sweeper forgets it and its code is unknown (404)', async () => {
    const s = await newShare(1)
    expect((await fetch(s.url(`code=${s.code}`))).status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { code: s.code }, from('198.51.100.4'))).status).toBe(410)
    // Issue 42: the receiver's transfer stays open for its window (24 h), so the share ends (and
    // is remembered) when the sweeper finds that window over ...
    clock.advance(ENDED_SHARE_KEPT_MS + 60_000)
    await h.services.cleanup.sweep()
    expect(await deps.db.share.findUnique({ where: { code: s.code } })).toBeNull()
    expect((await api(h, 'POST', '/api/take', { code: s.code }, from('198.51.100.4'))).status).toBe(410)
    // ... and is forgotten after the time an ended share is remembered.
    clock.advance(ENDED_SHARE_KEPT_MS + 60_000)
    await h.services.cleanup.sweep()
    expect((await api(h, 'POST', '/api/take', { code: s.code }, from('198.51.100.4'))).status).toBe(404)
  })

  it('when an administrator deletes a share, then its code is unknown (404), not "used up"', async () => {
    const s = await newShare(3)
    const admin = await adminLogin(h)
    expect((await api(h, 'DELETE', '/api/admin/shares', { code: s.code }, admin)).status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { code: s.code }, from('198.51.100.5'))).status).toBe(404)
  })
})

describe('admin logins', () => {
  it('when an address logs in successfully 12 times between failures, then only its failures count (5 allowed, the 6th is 429)', async () => {
    const ip = '198.51.100.6'
    const login = (password: string) =>
      api(
        h,
        'POST',
        '/api/admin/login',
        { password },
        { origin: h.url, 'x-requested-with': 'fetch', ...from(ip) },
      )
    for (let i = 0; i < 4; i++) expect((await login('wrong')).status).toBe(401)
    for (let i = 0; i < 12; i++) expect((await login(ADMIN_PASSWORD)).status).toBe(200)
    expect((await login('wrong')).status).toBe(401)
    expect((await login(ADMIN_PASSWORD)).status).toBe(429)
  })
})
