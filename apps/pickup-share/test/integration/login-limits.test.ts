import { setTimeout as sleep } from 'node:timers/promises'
import {
  ADMIN_HEADERS,
  ADMIN_PASSWORD,
  api,
  flood,
  type Harness,
  startHarness,
  testDeps,
} from '../support/harness.ts'

// Issue 19 item 5: per-address, per-account and global failure budgets on admin login, with backoff.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true })
})
afterAll(async () => {
  await h.close()
})

const login = (password: string, ip: string) =>
  api(h, 'POST', '/api/admin/login', { password }, { ...ADMIN_HEADERS(h), 'x-forwarded-for': ip })

describe('admin login limits', () => {
  // First: the account's count starts at 0 here.
  it('when 40 addresses guess the password at once, then past the account budget only one check runs at a time, and the owner gets in after the backoff', async () => {
    await h.services.settings.update({ loginFailuresPerAccount: 10, loginBackoffMaxSeconds: 1 })
    try {
      const started = performance.now()
      const answers = await flood(40, (i) => login(`guess-${i}`, `203.0.113.${i + 1}`), 20)
      const seconds = (performance.now() - started) / 1000
      const count = (status: number) => answers.filter((a) => a.status === status).length
      // 10 within the budget, then one check per backoff slot (1 s here) while the burst lasts;
      // every other attempt refused unchecked.
      expect(count(401)).toBeGreaterThanOrEqual(11)
      expect(count(401)).toBeLessThanOrEqual(11 + Math.floor(seconds))
      expect(count(401) + count(429)).toBe(40)
      const refused = answers.find((a) => a.status === 429)!
      expect(refused.body.error.details.reason).toBe('account')
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)

      // One more guess takes the slot; the owner, from a fresh address, is slowed behind it…
      await sleep(1100)
      expect((await login('wrong', '192.0.2.199')).status).toBe(401)
      const slowed = await login(ADMIN_PASSWORD, '192.0.2.200')
      expect(slowed.status).toBe(429)
      expect(slowed.body.error.details.reason).toBe('account')
      // …and in once the backoff has passed; a success ends the backoff for the next one too.
      await sleep(1100)
      expect((await login(ADMIN_PASSWORD, '192.0.2.200')).status).toBe(200)
      expect((await login(ADMIN_PASSWORD, '192.0.2.201')).status).toBe(200)
      // A further failure backs off again, longer each time (up to loginBackoffMaxSeconds).
      expect((await login('wrong', '192.0.2.202')).status).toBe(401)
      expect((await login('wrong', '192.0.2.203')).status).toBe(429)
    } finally {
      await h.services.settings.update({ loginFailuresPerAccount: 100_000, loginBackoffMaxSeconds: 60 })
    }
  })

  it('when one address fails 5 logins, then its 6th attempt is 429 even with the right password; another address logs in', async () => {
    for (let i = 0; i < 5; i++) expect((await login('wrong', '198.51.100.10')).status).toBe(401)
    const blocked = await login(ADMIN_PASSWORD, '198.51.100.10')
    expect(blocked.status).toBe(429)
    expect(blocked.body.error.details.reason).toBe('address')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(800)
    expect((await login(ADMIN_PASSWORD, '198.51.100.11')).status).toBe(200)
  })

  it('when an address logs in successfully many times, then it spends none of its failure budget', async () => {
    for (let i = 0; i < 12; i++) expect((await login(ADMIN_PASSWORD, '198.51.100.20')).status).toBe(200)
    const statuses = []
    for (let i = 0; i < 6; i++) statuses.push((await login('wrong', '198.51.100.20')).status)
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429])
  })

  it('when addresses of one IPv6 /64 fail logins, then they share one address budget', async () => {
    for (let i = 1; i <= 5; i++) expect((await login('wrong', `2001:db8:5:6::${i}`)).status).toBe(401)
    expect((await login(ADMIN_PASSWORD, '2001:db8:5:6::99')).status).toBe(429)
  })

  it('when failures of everyone pass the global budget, then logins back off for all', async () => {
    await h.services.settings.update({ loginFailuresGlobal: 3, loginBackoffMaxSeconds: 30 })
    try {
      // Earlier tests of this file already spent more than 3: the next failure holds the slot.
      expect((await login('wrong', '192.0.2.210')).status).toBe(401)
      const slowed = await login(ADMIN_PASSWORD, '192.0.2.211')
      expect(slowed.status).toBe(429)
      expect(slowed.body.error.details.reason).toBe('global')
      expect(Number(slowed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      expect(Number(slowed.headers.get('retry-after'))).toBeLessThanOrEqual(30)
    } finally {
      await h.services.settings.update({ loginFailuresGlobal: 1_000_000, loginBackoffMaxSeconds: 60 })
    }
  })
})
