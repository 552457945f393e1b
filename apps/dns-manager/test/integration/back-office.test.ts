import { request } from '@quartet/core/testing'
import { unique, useDeps } from '../helpers.ts'
import {
  type BackOffice,
  browserAgent,
  freeZone,
  PASSWORD,
  signUp,
  startBackOffice,
  tokenIn,
} from '../support/back-office.ts'

const deps = useDeps()
let bo: BackOffice

beforeAll(async () => {
  bo = await startBackOffice(deps)
})
afterAll(async () => {
  await bo?.close()
})

describe('back office: the journey through its JSON API', () => {
  it('when a person signs up through the mail link, then the pages run the API operations and the API switch holds', async () => {
    const zone = await freeZone(deps)
    const { browser, email } = await signUp(bo)

    const me = await browser.get('/account/api/account').expect(200)
    expect(me.body.account).toMatchObject({
      email,
      api_access_enabled: true,
      quota_total: 2,
      balance_cents: 0,
    })
    expect(me.headers['cache-control']).toBe('no-store')

    const created = await browser.op('subdomains.create', { subdomain: 'home', rootdomain: zone }).expect(201)
    const id = created.body.subdomain.id as number
    await browser
      .op('dns_records.create', { subdomain_id: id, type: 'A', name: '@', content: '93.184.215.14' })
      .expect(201)
    await browser
      .op('dns_records.create', { subdomain_id: id, type: 'TXT', name: '@', content: 'hello' })
      .expect(201)
    // The same validation message the API gives.
    const bad = await browser
      .op('dns_records.create', { subdomain_id: id, type: 'A', name: '@', content: '999.1.1.1' })
      .expect(400)
    expect(bad.body).toMatchObject({ success: false, error: { code: 'bad_request' } })

    const key = await browser.op('keys.create').expect(201)
    const headers = { 'X-API-Key': key.body.key.api_key, 'X-API-Secret': key.body.key.api_secret }
    await request(bo.url).post('/rest/auth/verify').set(headers).expect(200)
    const records = await request(bo.url).get(`/rest/subdomains/${id}/records`).set(headers).expect(200)
    expect(records.body.dns_records.map((r: { type: string }) => r.type).sort()).toEqual(['A', 'TXT'])

    await browser.post('/account/api/account/settings', { api_access_enabled: false }).expect(200)
    const refused = await request(bo.url).post('/rest/auth/verify').set(headers).expect(403)
    expect(refused.body.error.code).toBe('api_access_disabled')
    // The page still works with the API off: the holder turns it back on.
    await browser.post('/account/api/account/settings', { api_access_enabled: true }).expect(200)
    await request(bo.url).post('/rest/auth/verify').set(headers).expect(200)

    await browser.op('subdomains.delete', { id }).expect(200)
    await browser.op('subdomains.get', { id }).expect(404)

    const audit = await browser.get('/account/api/audit').expect(200)
    const ops = audit.body.entries.map((e: { operation: string; via: string }) => `${e.via} ${e.operation}`)
    expect(ops).toEqual(
      expect.arrayContaining([
        'web subdomains.create',
        'web dns_records.create',
        'web keys.create',
        'web account.settings',
        'web subdomains.delete',
        'web web.signup.complete',
      ]),
    )
  })
})

describe('back office: accounts for people', () => {
  it('when the address already has an account, then sign-up answers the same and mails a reset hint instead', async () => {
    const { email } = await signUp(bo)
    const again = await browserAgent(bo.url).post('/account/api/signup', { email }).expect(200)
    const fresh = await browserAgent(bo.url)
      .post('/account/api/signup', { email: `${unique('n')}@example.test` })
      .expect(200)
    expect(again.body).toEqual(fresh.body)
    const mail = await bo.smtp.mailTo(email)
    expect(mail.subject).toBe('You already have an account')
    expect(mail.text).not.toContain('token=')
  })

  it('when a sign-up link is used twice at once, then exactly one account is made', async () => {
    const email = `${unique('race')}@example.test`
    await browserAgent(bo.url).post('/account/api/signup', { email }).expect(200)
    const token = tokenIn((await bo.smtp.mailTo(email)).text, '/account/signup/complete')
    const answers = await Promise.all(
      Array.from({ length: 5 }, () =>
        browserAgent(bo.url).post('/account/api/signup/complete', { token, password: PASSWORD }),
      ),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([201, 400, 400, 400, 400])
    expect(answers.filter((a) => a.status === 400).map((a) => a.body.error.code)).toEqual(
      Array(4).fill('link_invalid'),
    )
  })

  it('when signing in and out, then the cookie is HttpOnly and SameSite and the session ends', async () => {
    const { email } = await signUp(bo)
    const browser = browserAgent(bo.url)
    const wrong = await browser
      .post('/account/api/signin', { email, password: 'wrong password!' })
      .expect(401)
    const unknown = await browser
      .post('/account/api/signin', { email: `${unique('x')}@example.test`, password: 'wrong password!' })
      .expect(401)
    expect(wrong.body.error).toEqual(unknown.body.error)
    const ok = await browser.post('/account/api/signin', { email, password: PASSWORD }).expect(200)
    const cookie = String(ok.headers['set-cookie'])
    expect(cookie).toMatch(/qdm_session=/)
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Strict/i)
    await browser.get('/account/api/account').expect(200)
    await browser.post('/account/api/signout').expect(200)
    const after = await browser.get('/account/api/account').expect(401)
    expect(after.body.error.code).toBe('session_required')
  })

  it('when the password changes, then every other session ends and the new password works', async () => {
    const { browser, email } = await signUp(bo)
    const other = browserAgent(bo.url)
    await other.post('/account/api/signin', { email, password: PASSWORD }).expect(200)
    const short = await browser
      .post('/account/api/account/password', { current_password: PASSWORD, new_password: 'short' })
      .expect(400)
    expect(short.body.error.details.field).toBe('new_password')
    const wrong = await browser
      .post('/account/api/account/password', {
        current_password: 'not it at all',
        new_password: 'a new long password',
      })
      .expect(401)
    expect(wrong.body.error.code).toBe('auth_invalid_password')
    await browser
      .post('/account/api/account/password', {
        current_password: PASSWORD,
        new_password: 'a new long password',
      })
      .expect(200)
    await other.get('/account/api/account').expect(401)
    await browser.get('/account/api/account').expect(200)
    await browserAgent(bo.url).post('/account/api/signin', { email, password: PASSWORD }).expect(401)
    await browserAgent(bo.url)
      .post('/account/api/signin', { email, password: 'a new long password' })
      .expect(200)
  })

  it('when a password is reset by mail, then sessions end and the link works once; unknown addresses answer the same', async () => {
    const { browser, email } = await signUp(bo)
    const unknown = await browserAgent(bo.url)
      .post('/account/api/reset', { email: `${unique('nobody')}@example.test` })
      .expect(200)
    const known = await browserAgent(bo.url).post('/account/api/reset', { email }).expect(200)
    expect(known.body).toEqual(unknown.body)
    const token = tokenIn((await bo.smtp.mailTo(email)).text, '/account/reset/complete')
    await browserAgent(bo.url)
      .post('/account/api/reset/complete', { token, password: 'reset long password' })
      .expect(200)
    await browser.get('/account/api/account').expect(401)
    const again = await browserAgent(bo.url)
      .post('/account/api/reset/complete', { token, password: 'another long password' })
      .expect(400)
    expect(again.body.error.code).toBe('link_invalid')
    await browserAgent(bo.url)
      .post('/account/api/signin', { email, password: 'reset long password' })
      .expect(200)
  })

  it('when an account made by the CLI has no password, then the reset mail sets its first one', async () => {
    const { createAccount } = await import('../helpers.ts')
    const a = await createAccount(deps)
    const { email } = (await deps.db.account.findUniqueOrThrow({ where: { id: a.accountId } })) as {
      email: string
    }
    await browserAgent(bo.url).post('/account/api/signin', { email, password: PASSWORD }).expect(401)
    await browserAgent(bo.url).post('/account/api/reset', { email }).expect(200)
    const token = tokenIn((await bo.smtp.mailTo(email)).text, '/account/reset/complete')
    await browserAgent(bo.url).post('/account/api/reset/complete', { token, password: PASSWORD }).expect(200)
    const browser = browserAgent(bo.url)
    await browser.post('/account/api/signin', { email, password: PASSWORD }).expect(200)
    const keys = await browser.op('keys.list').expect(200)
    expect(keys.body.keys).toHaveLength(1)
  })
})

describe('back office: web security', () => {
  it('when a write lacks X-Requested-With or comes from another site, then it is refused with csrf_rejected', async () => {
    const { email } = await signUp(bo)
    const plain = await request(bo.url)
      .post('/account/api/signin')
      .set('Origin', bo.url)
      .send({ email, password: PASSWORD })
      .expect(403)
    expect(plain.body.error.code).toBe('csrf_rejected')
    const cross = await request(bo.url)
      .post('/account/api/signin')
      .set('X-Requested-With', 'fetch')
      .set('Origin', 'https://evil.example')
      .send({ email, password: PASSWORD })
      .expect(403)
    expect(cross.body.error.code).toBe('csrf_rejected')
    const site = await request(bo.url)
      .post('/account/api/signin')
      .set('X-Requested-With', 'fetch')
      .set('Sec-Fetch-Site', 'cross-site')
      .send({ email, password: PASSWORD })
      .expect(403)
    expect(site.body.error.code).toBe('csrf_rejected')
  })

  it('when the signed-out pages ask for account data or operations, then 401 session_required', async () => {
    const anon = browserAgent(bo.url)
    for (const res of [
      await anon.get('/account/api/account'),
      await anon.get('/account/api/audit'),
      await anon.op('subdomains.list'),
      await anon.post('/account/api/account/settings', { api_access_enabled: false }),
    ]) {
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ success: false, error: { code: 'session_required' } })
    }
  })

  it('when an unknown operation or bad settings are sent, then a clear 4xx', async () => {
    const { browser } = await signUp(bo)
    const unknown = await browser.op('nope.nothing').expect(404)
    expect(unknown.body.error.code).toBe('not_found')
    const badIp = await browser
      .post('/account/api/account/settings', { ip_allow_list: ['10.0.0.0/8', 'not-an-ip'] })
      .expect(400)
    expect(badIp.body.error.details).toMatchObject({ field: 'ip_allow_list', value: 'not-an-ip' })
    const extra = await browser.post('/account/api/account/settings', { owner: 'me' }).expect(400)
    expect(extra.body.error.code).toBe('bad_request')
  })

  it('when the allow list is set from the pages, then the API refuses other addresses and the page does not', async () => {
    const { browser } = await signUp(bo)
    const key = await browser.op('keys.create').expect(201)
    const headers = { 'X-API-Key': key.body.key.api_key, 'X-API-Secret': key.body.key.api_secret }
    const set = await browser
      .post('/account/api/account/settings', { ip_allow_list: ['192.0.2.0/24', '2001:db8::/32'] })
      .expect(200)
    expect(set.body.account).toMatchObject({
      ip_allow_list: ['192.0.2.0/24', '2001:db8::/32'],
      your_ip: '127.0.0.1',
    })
    const refused = await request(bo.url).post('/rest/auth/verify').set(headers).expect(403)
    expect(refused.body.error.code).toBe('auth_ip_not_allowed')
    await browser.op('subdomains.list').expect(200)
    await browser.post('/account/api/account/settings', { ip_allow_list: ['127.0.0.1'] }).expect(200)
    await request(bo.url).post('/rest/auth/verify').set(headers).expect(200)
  })
})

describe('back office: limits, registration modes and outages', () => {
  it('when sign-in is tried too often for one account, then 429 with Retry-After, from any address', async () => {
    const limited = await startBackOffice(deps, {
      SIGNIN_ATTEMPTS_PER_ACCOUNT: '3',
      SIGNIN_ATTEMPTS_PER_ADDRESS: '100',
    })
    try {
      const { email } = await signUp(limited)
      for (let i = 0; i < 3; i++)
        await browserAgent(limited.url)
          .post('/account/api/signin', { email, password: 'wrong password!' })
          .expect(401)
      const refused = await browserAgent(limited.url)
        .post('/account/api/signin', { email, password: PASSWORD })
        .expect(429)
      expect(refused.body.error.code).toBe('rate_limit_exceeded')
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
      // Reset requests for that address are limited the same way, and say nothing about the account.
      for (let i = 0; i < 3; i++)
        await browserAgent(limited.url).post('/account/api/reset', { email }).expect(200)
      await browserAgent(limited.url).post('/account/api/reset', { email }).expect(429)
    } finally {
      await limited.close()
    }
  })

  it('when one address tries many accounts, then 429 after its budget', async () => {
    const limited = await startBackOffice(deps, { SIGNIN_ATTEMPTS_PER_ADDRESS: '4' }, { ownKv: true })
    try {
      const answers: number[] = []
      for (let i = 0; i < 6; i++) {
        const res = await browserAgent(limited.url).post('/account/api/signin', {
          email: `${unique('guess')}@example.test`,
          password: 'wrong password!',
        })
        answers.push(res.status)
      }
      expect(answers).toEqual([401, 401, 401, 401, 429, 429])
    } finally {
      await limited.close()
    }
  })

  it('when sign-in is raced past the budget, then no more attempts are checked than the budget allows', async () => {
    const limited = await startBackOffice(deps, {
      SIGNIN_ATTEMPTS_PER_ACCOUNT: '5',
      SIGNIN_ATTEMPTS_PER_ADDRESS: '100',
    })
    try {
      const { email } = await signUp(limited)
      const answers = await Promise.all(
        Array.from({ length: 12 }, () =>
          browserAgent(limited.url).post('/account/api/signin', { email, password: 'wrong password!' }),
        ),
      )
      const statuses = answers.map((a) => a.status)
      expect(statuses.filter((s) => s === 401)).toHaveLength(5)
      expect(statuses.filter((s) => s === 429)).toHaveLength(7)
    } finally {
      await limited.close()
    }
  })

  it('when registration is closed, then sign-up is 403 registration_closed', async () => {
    const closed = await startBackOffice(deps, { REGISTRATION: 'closed' })
    try {
      const res = await browserAgent(closed.url)
        .post('/account/api/signup', { email: `${unique('c')}@example.test` })
        .expect(403)
      expect(res.body.error.code).toBe('registration_closed')
      const site = await browserAgent(closed.url).get('/account/api/site').expect(200)
      expect(site.body.registration).toBe('closed')
    } finally {
      await closed.close()
    }
  })

  it('when the mail server is down, then sign-up answers 503 mail_unavailable with Retry-After', async () => {
    const down = await startBackOffice(deps)
    await down.smtp.close()
    try {
      const res = await browserAgent(down.url)
        .post('/account/api/signup', { email: `${unique('down')}@example.test` })
        .expect(503)
      expect(res.body.error.code).toBe('mail_unavailable')
      expect(res.headers['retry-after']).toBeDefined()
    } finally {
      await down.server.close()
    }
  })

  it('when a reset link is used concurrently, then exactly one use sets the password', async () => {
    const { email } = await signUp(bo)
    await browserAgent(bo.url).post('/account/api/reset', { email }).expect(200)
    const token = tokenIn((await bo.smtp.mailTo(email)).text, '/account/reset/complete')
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        browserAgent(bo.url).post('/account/api/reset/complete', { token, password: `racing password ${i}` }),
      ),
    )
    expect(answers.map((a) => a.status).sort()).toEqual([200, 400, 400, 400, 400])
  })

  it('when bad input reaches the account routes, then a clear 400 in the envelope', async () => {
    const anon = browserAgent(bo.url)
    const email = await anon.post('/account/api/signup', { email: 'not-an-address' }).expect(400)
    expect(email.body).toMatchObject({ success: false, error: { code: 'bad_request' } })
    expect(email.body.error.message).toMatch(/email/)
    const short = await anon
      .post('/account/api/signup/complete', { token: 'x'.repeat(43), password: 'short' })
      .expect(400)
    expect(short.body.error.details.field).toBe('password')
    const link = await anon.get(`/account/api/signup/link?token=${'y'.repeat(43)}`).expect(400)
    expect(link.body.error.code).toBe('link_invalid')
    const unknown = await anon.get('/account/api/nothing-here').expect(401)
    expect(unknown.body.error.code).toBe('session_required')
  })
})

describe('back office: the pages are served', () => {
  it('when a page is asked for, then the one HTML document with a strict CSP; assets are immutable', async () => {
    const { ensureWebBuilt } = await import('@quartet/web-pages/testing')
    const path = await import('node:path')
    ensureWebBuilt(path.resolve(__dirname, '..', '..'))
    for (const p of [
      '/',
      '/account',
      '/account/keys',
      '/account/subdomains/12',
      '/account/signup/complete',
    ]) {
      const res = await request(bo.url).get(p).expect(200)
      expect(res.headers['content-type']).toMatch(/text\/html/)
      expect(res.headers['content-security-policy']).toContain("script-src 'self'")
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'")
    }
    const html = (await request(bo.url).get('/').expect(200)).text
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!
    const js = await request(bo.url).get(asset).expect(200)
    expect(js.headers['cache-control']).toContain('immutable')
  })
})

describe('back office: sessions end', () => {
  it('when a session is unused past WEB_SESSION_IDLE_MINUTES, or older than 12 hours, then it is over', async () => {
    let now = Date.now()
    const clock = { now: () => new Date(now) }
    const timed = await startBackOffice(deps, { WEB_SESSION_IDLE_MINUTES: '30' }, { clock })
    try {
      const { browser } = await signUp(timed)
      now += 29 * 60_000
      await browser.get('/account/api/account').expect(200)
      now += 29 * 60_000 // used a minute ago: still within the idle time
      await browser.get('/account/api/account').expect(200)
      now += 31 * 60_000
      const idle = await browser.get('/account/api/account').expect(401)
      expect(idle.body.error.code).toBe('session_required')

      const { browser: busy } = await signUp(timed)
      for (let i = 0; i < 25; i++) {
        now += 29 * 60_000 // used every 29 minutes, 12 hours and more
        const res = await busy.get('/account/api/account')
        if (i < 24) expect(res.status).toBe(200)
        else expect(res.status).toBe(401)
      }
    } finally {
      await timed.close()
    }
  })

  it('when the audit log is longer than a page, then `before` pages back to the start', async () => {
    const { browser } = await signUp(bo)
    for (let i = 0; i < 3; i++)
      await browser.post('/account/api/account/settings', { api_access_enabled: i % 2 === 0 }).expect(200)
    const first = await browser.get('/account/api/audit?limit=2').expect(200)
    expect(first.body.entries).toHaveLength(2)
    expect(first.body.next_before).toEqual(expect.any(String))
    const rest = await browser.get(`/account/api/audit?limit=50&before=${first.body.next_before}`).expect(200)
    const all = [...first.body.entries, ...rest.body.entries]
    expect(all.map((e: { operation: string }) => e.operation)).toEqual([
      'account.settings',
      'account.settings',
      'account.settings',
      'web.signup.complete',
    ])
    expect(all[0]).toMatchObject({ via: 'web', ip: '127.0.0.1', target: 'api_access=on' })
    expect(rest.body.next_before).toBeNull()
  })
})
