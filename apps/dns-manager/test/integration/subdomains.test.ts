import type supertest from 'supertest'
import { fixedClock } from '@quartet/core/clock'
import { request } from '@quartet/core/testing'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()
const DAY = 86_400_000

async function zone(priceCents = 0, termYears = 1): Promise<string> {
  const name = `${unique('z')}.test`
  await addZone(deps, name, priceCents, termYears)
  return name
}

describe('subdomains: create, read, quota and balance', () => {
  it('when a subdomain is created, then it is listed, readable and counted in the quota', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 3 })
    const created = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'MyHost', rootdomain: root })
      .expect(201)
    expect(created.body).toMatchObject({
      success: true,
      subdomain: {
        id: expect.any(Number),
        subdomain: 'myhost',
        rootdomain: root,
        full_domain: `myhost.${root}`,
        status: 'active',
        never_expires: false,
      },
    })
    const s = created.body.subdomain
    expect(Date.parse(s.expires_at) - Date.parse(s.created_at)).toBeGreaterThan(364 * DAY)
    await request(app)
      .get(`/rest/subdomains/${s.id}`)
      .set(a.headers)
      .expect(200, { success: true, subdomain: s })
    const list = await request(app).get('/rest/subdomains').set(a.headers).expect(200)
    expect(list.body).toEqual({ success: true, subdomains: [s], next_cursor: null })
    const quota = await request(app).get('/rest/quota').set(a.headers).expect(200)
    expect(quota.body.quota).toEqual({ used: 1, total: 3, available: 2 })
  })

  it('when a label is IDN, then it is stored as punycode; bad labels are 400 naming the field', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 10 })
    const idn = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'bücher', rootdomain: root })
      .expect(201)
    expect(idn.body.subdomain.subdomain).toBe('xn--bcher-kva')
    for (const bad of ['-lead', 'trail-', 'a'.repeat(64), 'has.dot', 'under_score', '', 'sp ace']) {
      const res = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: bad, rootdomain: root })
        .expect(400)
      expect(res.body.error.code).toBe('bad_request')
      expect(JSON.stringify(res.body.error.details)).toContain('subdomain')
    }
    const reserved = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'www', rootdomain: root })
      .expect(400)
    expect(reserved.body.error.details).toMatchObject({ field: 'subdomain', reserved: true })
    const unknownZone = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'ok', rootdomain: 'nope.test' })
      .expect(400)
    expect(unknownZone.body.error.details.field).toBe('rootdomain')
    const extra = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'ok', rootdomain: root, x: 1 })
      .expect(400)
    expect(extra.body.error.code).toBe('bad_request')
    expect((await request(app).get('/rest/quota').set(a.headers)).body.quota.used).toBe(1)
  })

  it('when the name is taken by another account, then 409 subdomain_taken', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps)
    const b = await createAccount(deps)
    await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'same', rootdomain: root })
      .expect(201)
    const res = await request(app)
      .post('/rest/subdomains')
      .set(b.headers)
      .send({ subdomain: 'same', rootdomain: root })
      .expect(409)
    expect(res.body.error.code).toBe('subdomain_taken')
  })

  it("when another account's subdomain is asked for, then 404 subdomain_not_found", async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps)
    const b = await createAccount(deps)
    const s = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'mine', rootdomain: root })
      .expect(201)
    const res = await request(app).get(`/rest/subdomains/${s.body.subdomain.id}`).set(b.headers).expect(404)
    expect(res.body.error.code).toBe('subdomain_not_found')
    await request(app).get('/rest/subdomains/abc').set(a.headers).expect(400)
  })

  it('when there are more subdomains than per_page, then the cursor walks every page once', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 5 })
    for (let i = 0; i < 5; i++)
      await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: `p${i}`, rootdomain: root })
        .expect(201)
    const seen: string[] = []
    let cursor: string | null = ''
    while (cursor !== null) {
      const res: supertest.Response = await request(app)
        .get('/rest/subdomains')
        .query({ per_page: 2, cursor })
        .set(a.headers)
        .expect(200)
      seen.push(...res.body.subdomains.map((s: { subdomain: string }) => s.subdomain))
      cursor = res.body.next_cursor
    }
    expect(seen).toEqual(['p0', 'p1', 'p2', 'p3', 'p4'])
    await request(app).get('/rest/subdomains').query({ per_page: 501 }).set(a.headers).expect(400)
    await request(app).get('/rest/subdomains').query({ cursor: 'x' }).set(a.headers).expect(400)
  })

  it('when a cursor is a number past the largest id (a Postgres integer), then every style answers 400 bad_request, not 500', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 5 })
    const s = (
      await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: 'big', rootdomain: root })
        .expect(201)
    ).body.subdomain
    for (const cursor of ['2147483648', '9999999999']) {
      for (const path of ['/rest/subdomains', `/rest/subdomains/${s.id}/records`]) {
        const res = await request(app).get(path).query({ cursor }).set(a.headers)
        expect({ path, status: res.status, code: res.body.error?.code }).toEqual({
          path,
          status: 400,
          code: 'bad_request',
        })
      }
      const rpc = await request(app)
        .post('/rpc')
        .set(a.headers)
        .send([
          { jsonrpc: '2.0', id: 1, method: 'subdomains.list', params: { cursor } },
          { jsonrpc: '2.0', id: 2, method: 'dns_records.list', params: { subdomain_id: s.id, cursor } },
        ])
      expect(
        rpc.body.map((r: { error?: { data?: { error_code?: string } } }) => r.error?.data?.error_code),
      ).toEqual(['bad_request', 'bad_request'])
      const gql = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({ query: `{ subdomains(cursor: "${cursor}") { next_cursor } }` })
      expect(gql.body.errors?.[0]?.extensions?.code).toBe('bad_request')
    }
    // The largest id itself is a cursor: past every row, an empty page.
    const last = await request(app)
      .get('/rest/subdomains')
      .query({ cursor: '2147483647' })
      .set(a.headers)
      .expect(200)
    expect(last.body).toEqual({ success: true, subdomains: [], next_cursor: null })
  })

  it('when 10 creates race for the last 2 quota slots, then exactly 2 succeed and the rest are 429 quota_exceeded', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 3 })
    await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'first', rootdomain: root })
      .expect(201)
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        request(app)
          .post('/rest/subdomains')
          .set(a.headers)
          .send({ subdomain: `race${i}`, rootdomain: root }),
      ),
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 201)).toHaveLength(2)
    expect(statuses.filter((s) => s === 429)).toHaveLength(8)
    for (const r of results.filter((x) => x.status === 429)) expect(r.body.error.code).toBe('quota_exceeded')
    expect((await request(app).get('/rest/quota').set(a.headers)).body.quota).toEqual({
      used: 3,
      total: 3,
      available: 0,
    })
  })

  it('when 6 paid creates race with a balance for 2, then exactly 2 are charged and the balance never goes negative', async () => {
    const { app } = buildApp(deps)
    const root = await zone(250)
    const a = await createAccount(deps, { quota: 10, balanceCents: 500 })
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        request(app)
          .post('/rest/subdomains')
          .set(a.headers)
          .send({ subdomain: `paid${i}`, rootdomain: root }),
      ),
    )
    expect(results.filter((r) => r.status === 201)).toHaveLength(2)
    const refused = results.filter((r) => r.status === 402)
    expect(refused).toHaveLength(4)
    expect(refused[0]!.body.error).toMatchObject({
      code: 'insufficient_balance',
      details: { balance: 0, required: 250 },
    })
    expect((await request(app).get('/rest/quota').set(a.headers)).body.balance_cents).toBe(0)
  })
})

describe('renewal', () => {
  async function setup(priceCents: number, balanceCents: number) {
    const clock = fixedClock('2027-01-01T00:00:00.000Z')
    const { app, useCases } = buildApp(deps, { clock })
    const root = await zone(priceCents)
    const a = await createAccount(deps, { quota: 5, balanceCents: balanceCents + priceCents })
    const res = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'renew', rootdomain: root })
      .expect(201)
    return {
      app,
      useCases,
      clock,
      a,
      root,
      id: res.body.subdomain.id as number,
      expiresAt: Date.parse(res.body.subdomain.expires_at),
    }
  }

  it('when the window is not open yet, then 422 renewal_not_yet_available with window_opens_at and seconds_until_window', async () => {
    const { app, a, id, expiresAt } = await setup(0, 0)
    const res = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers).expect(422)
    expect(res.body.error.code).toBe('renewal_not_yet_available')
    expect(res.body.error.details.window_opens_at).toBe(new Date(expiresAt - 30 * DAY).toISOString())
    expect(res.body.error.details.seconds_until_window).toBe(
      Math.ceil((expiresAt - 30 * DAY - Date.parse('2027-01-01T00:00:00Z')) / 1000),
    )
  })

  it('when renewed inside the window, then the new expiry is expires_at + term and the price is charged', async () => {
    const { app, clock, a, id, expiresAt } = await setup(300, 300)
    clock.set(new Date(expiresAt - 10 * DAY))
    const res = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers).expect(200)
    const expected = new Date(expiresAt)
    expected.setUTCFullYear(expected.getUTCFullYear() + 1)
    expect(res.body).toMatchObject({ success: true, charged_cents: 300, balance_cents: 0 })
    expect(res.body.subdomain.expires_at).toBe(expected.toISOString())
  })

  it('when renewed in the grace period, then status was grace and the new expiry is now + term', async () => {
    const { app, clock, a, id, expiresAt } = await setup(0, 0)
    const now = new Date(expiresAt + 5 * DAY)
    clock.set(now)
    expect((await request(app).get(`/rest/subdomains/${id}`).set(a.headers)).body.subdomain.status).toBe(
      'grace',
    )
    const res = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers).expect(200)
    const expected = new Date(now)
    expected.setUTCFullYear(expected.getUTCFullYear() + 1)
    expect(res.body.subdomain.expires_at).toBe(expected.toISOString())
    expect(res.body.subdomain.status).toBe('active')
  })

  it('when the grace period has passed, then 403 renewal_window_expired, and the sweeper releases it', async () => {
    const { app, useCases, clock, a, root, id, expiresAt } = await setup(0, 0)
    clock.set(new Date(expiresAt + 46 * DAY))
    const res = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers).expect(403)
    expect(res.body.error.code).toBe('renewal_window_expired')
    const swept = await useCases.sweepExpired()
    expect(swept.released).toContain(`renew.${root}`)
    await request(app).get(`/rest/subdomains/${id}`).set(a.headers).expect(404)
    expect((await request(app).get('/rest/quota').set(a.headers)).body.quota.used).toBe(0)
  })

  it('when the balance does not cover the renewal, then 402 insufficient_balance with balance and required', async () => {
    const { app, clock, a, id, expiresAt } = await setup(300, 100)
    clock.set(new Date(expiresAt - DAY))
    const res = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers).expect(402)
    expect(res.body.error).toMatchObject({
      code: 'insufficient_balance',
      details: { balance: 100, required: 300 },
    })
  })

  it('when 5 renewals of one subdomain race inside the window, then exactly one is charged and the rest see the window closed', async () => {
    const { app, clock, a, id, expiresAt } = await setup(100, 1000)
    clock.set(new Date(expiresAt - DAY))
    const results = await Promise.all(
      Array.from({ length: 5 }, () => request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers)),
    )
    expect(results.map((r) => r.status).sort()).toEqual([200, 422, 422, 422, 422])
    expect((await request(app).get('/rest/quota').set(a.headers)).body.balance_cents).toBe(900)
  })
})

describe('delete, whois, system, keys, zone export', () => {
  it('when a subdomain is deleted (POST …/delete or DELETE), then it is gone and the slot is free', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps, { quota: 2 })
    const s1 = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'd1', rootdomain: root })
      .expect(201)
    const s2 = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'd2', rootdomain: root })
      .expect(201)
    await request(app)
      .post(`/rest/subdomains/${s1.body.subdomain.id}/delete`)
      .set(a.headers)
      .expect(200, { success: true, deleted: true, id: s1.body.subdomain.id })
    await request(app).delete(`/api/v1/rest/subdomains/${s2.body.subdomain.id}`).set(a.headers).expect(200)
    await request(app).delete(`/rest/subdomains/${s2.body.subdomain.id}`).set(a.headers).expect(404)
    expect((await request(app).get('/rest/quota').set(a.headers)).body.quota.used).toBe(0)
    const audit = await deps.database.query<{ operation: string; outcome: string }>(
      'SELECT operation, outcome FROM audit_log WHERE account_id = $1 ORDER BY id',
      [a.accountId],
    )
    expect(audit.rows.map((r) => `${r.operation}:${r.outcome}`)).toEqual([
      'subdomains.create:ok',
      'subdomains.create:ok',
      'subdomains.delete:ok',
      'subdomains.delete:ok',
      'subdomains.delete:subdomain_not_found',
    ])
  })

  it('when WHOIS is asked, then registered, available, reserved and unknown-zone answers come back', async () => {
    const { app } = buildApp(deps)
    const root = await zone()
    const a = await createAccount(deps)
    await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'taken', rootdomain: root })
      .expect(201)
    const reg = await request(app)
      .get('/rest/whois')
      .query({ domain: `taken.${root}` })
      .set(a.headers)
      .expect(200)
    expect(reg.body.whois).toMatchObject({
      domain: `taken.${root}`,
      status: 'registered',
      nameservers: ['ns1.example.net', 'ns2.example.net'],
    })
    expect(reg.body.whois.created_at).toEqual(expect.any(String))
    expect(
      (
        await request(app)
          .get('/rest/whois')
          .query({ domain: `free.${root}` })
          .set(a.headers)
      ).body.whois.status,
    ).toBe('available')
    expect(
      (
        await request(app)
          .get('/rest/whois')
          .query({ domain: `www.${root}` })
          .set(a.headers)
      ).body.whois.status,
    ).toBe('reserved')
    expect(
      (await request(app).get('/rest/whois').query({ domain: 'x.elsewhere.test' }).set(a.headers)).status,
    ).toBe(404)
    expect((await request(app).get('/rest/whois').set(a.headers)).status).toBe(400)
  })

  it('when system info is asked, then version, zones with prices and terms, limits and health come back', async () => {
    const { app } = buildApp(deps)
    const root = await zone(199, 2)
    const a = await createAccount(deps)
    const res = await request(app).get('/rest/system').set(a.headers).expect(200)
    expect(res.body.system.zones).toContainEqual({
      name: root,
      price_cents: 199,
      term_years: 2,
      never_expires: false,
    })
    expect(res.body.system.limits).toMatchObject({
      rate_limit_per_minute: 60,
      ttl_min: 60,
      ttl_max: 86400,
      rpc_max_batch: 20,
    })
    expect(res.body.system.limits.record_types).toEqual([
      'A',
      'AAAA',
      'CNAME',
      'MX',
      'TXT',
      'NS',
      'SRV',
      'CAA',
    ])
    expect(res.body.system.health).toEqual({ database: 'ok' })
  })

  it('when keys are created past the limit of 3, then 409 key_limit_reached; a regenerated secret replaces the old one', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const results = await Promise.all([1, 2, 3, 4].map(() => request(app).post('/rest/keys').set(a.headers)))
    expect(results.filter((r) => r.status === 201)).toHaveLength(2)
    expect(results.filter((r) => r.status === 409).map((r) => r.body.error.code)).toEqual([
      'key_limit_reached',
      'key_limit_reached',
    ])
    const created = results.find((r) => r.status === 201)!.body.key
    expect(created.api_key).toMatch(/^dnsm_[0-9a-f]{32}$/)
    expect(created.api_secret).toMatch(/^[0-9a-f]{64}$/)
    const listed = await request(app).get('/rest/keys').set(a.headers).expect(200)
    expect(listed.body.keys).toHaveLength(3)
    expect(JSON.stringify(listed.body)).not.toContain(created.api_secret)
    const regen = await request(app).post(`/rest/keys/${created.id}/regenerate`).set(a.headers).expect(200)
    await request(app)
      .post('/rest/auth/verify')
      .set({ 'X-API-Key': created.api_key, 'X-API-Secret': created.api_secret })
      .expect(401)
    await request(app)
      .post('/rest/auth/verify')
      .set({ 'X-API-Key': created.api_key, 'X-API-Secret': regen.body.key.api_secret })
      .expect(200)
    await request(app).delete(`/rest/keys/${created.id}`).set(a.headers).expect(200)
    await request(app)
      .post('/rest/auth/verify')
      .set({ 'X-API-Key': created.api_key, 'X-API-Secret': regen.body.key.api_secret })
      .expect(401)
    await request(app).delete('/rest/keys/not-a-uuid').set(a.headers).expect(400)
  })

  it('when the zone is exported, then it is a BIND file with the confirmed records', async () => {
    const { app } = buildApp(deps)
    const root = await zone(0, 0)
    const a = await createAccount(deps)
    const s = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'zf', rootdomain: root })
      .expect(201)
    expect(s.body.subdomain).toMatchObject({ never_expires: true, expires_at: null })
    const id = s.body.subdomain.id
    await request(app)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'A', name: '@', content: '8.8.8.8' })
      .expect(201)
    await request(app)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'MX', content: 'mx.example.com', priority: 10, ttl: 3600 })
      .expect(201)
    const res = await request(app).get(`/rest/subdomains/${id}/zone`).set(a.headers).expect(200)
    expect(res.headers['content-type']).toMatch(/^text\/dns/)
    expect(res.text).toContain(`$ORIGIN zf.${root}.`)
    expect(res.text).toContain('@ 600 IN A 8.8.8.8')
    expect(res.text).toContain('@ 3600 IN MX 10 mx.example.com.')
  })
})
