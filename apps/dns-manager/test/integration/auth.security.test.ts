import { createServer } from 'node:http'
import { requestListener } from '@quartet/core/http'
import { request, startTestServer } from '@quartet/core/testing'
import { dnsOperations as operations } from '../../src/http/operations.ts'
import { buildApp, createAccount, useDeps } from '../helpers.ts'

const deps = useDeps()

describe('the request pipeline: credentials, API switch, allow list, rate limit', () => {
  it('when the credentials are right, then auth.verify answers exactly the seed shape', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps, { quota: 7 })
    const res = await request(app).post('/rest/auth/verify').set(a.headers).expect(200)
    expect(res.body).toEqual({
      success: true,
      account: { api_key: a.apiKey, quota: { used: 0, total: 7, available: 7 } },
    })
  })

  it('when the credentials come as Authorization: Bearer KEY:SECRET under /api/v1, then they work too', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app)
      .post('/api/v1/rest/auth/verify')
      .set('Authorization', `Bearer ${a.apiKey}:${a.apiSecret}`)
      .expect(200)
    expect(res.body.account.api_key).toBe(a.apiKey)
  })

  it.each([
    ['no credentials', {}],
    ['a key without a secret', { 'X-API-Key': 'dnsm_x' }],
    ['an unknown key', { 'X-API-Key': 'dnsm_nope', 'X-API-Secret': 'a'.repeat(64) }],
    ['a malformed bearer', { Authorization: 'Bearer no-colon' }],
  ])(
    'when the request carries %s, then 401 auth_invalid_credentials in the envelope',
    async (_name, headers) => {
      const { app } = buildApp(deps)
      const res = await request(app)
        .post('/rest/auth/verify')
        .set(headers)
        .set('X-Request-Id', 'req-401')
        .expect(401)
      expect(res.body).toEqual({
        success: false,
        error: { code: 'auth_invalid_credentials', message: expect.any(String) },
        request_id: 'req-401',
      })
    },
  )

  it('when the secret is wrong, then 401 auth_invalid_credentials', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app)
      .post('/rest/auth/verify')
      .set({ 'X-API-Key': a.apiKey, 'X-API-Secret': 'f'.repeat(64) })
      .expect(401)
    expect(res.body.error.code).toBe('auth_invalid_credentials')
  })

  it('when API access is switched off, then 403 api_access_disabled', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps, { apiAccess: false })
    const res = await request(app).post('/rest/auth/verify').set(a.headers).expect(403)
    expect(res.body.error.code).toBe('api_access_disabled')
  })

  it('when every operation is called without credentials, then each answers 401 (no route skips the pipeline)', async () => {
    const { app } = buildApp(deps)
    for (const op of operations) {
      const path = `${op.route.path.replace(/:([a-z_]+)/g, (_m, p: string) => (p === 'id' && op.name.startsWith('keys') ? '00000000-0000-4000-8000-000000000000' : '1'))}`
      const res = await request(app)[op.route.method](path).expect(401)
      expect(res.body.error.code).toBe('auth_invalid_credentials')
    }
  })

  describe('IP allow list', () => {
    it('when the client IPv4 is inside an allowed CIDR, then it passes; outside, 403 auth_ip_not_allowed', async () => {
      const { app } = buildApp(deps)
      const inside = await createAccount(deps, { allowList: ['127.0.0.0/8'] })
      const outside = await createAccount(deps, { allowList: ['192.0.2.0/24'] })
      await request(app).post('/rest/auth/verify').set(inside.headers).expect(200)
      const res = await request(app).post('/rest/auth/verify').set(outside.headers).expect(403)
      expect(res.body.error.code).toBe('auth_ip_not_allowed')
    })

    it('when behind a trusted proxy, then the X-Forwarded-For client (v4 and v6) is checked', async () => {
      const { app } = buildApp(deps, { env: { TRUST_PROXY: 'loopback' } })
      const v6 = await createAccount(deps, { allowList: ['2001:db8:1::/48'] })
      const v4 = await createAccount(deps, { allowList: ['198.51.100.7'] })
      await request(app)
        .post('/rest/auth/verify')
        .set(v6.headers)
        .set('X-Forwarded-For', '2001:db8:1::42')
        .expect(200)
      await request(app)
        .post('/rest/auth/verify')
        .set(v6.headers)
        .set('X-Forwarded-For', '2001:db8:2::42')
        .expect(403)
      await request(app)
        .post('/rest/auth/verify')
        .set(v4.headers)
        .set('X-Forwarded-For', '198.51.100.7')
        .expect(200)
      await request(app)
        .post('/rest/auth/verify')
        .set(v4.headers)
        .set('X-Forwarded-For', '::ffff:198.51.100.7')
        .expect(200)
    })

    it('when an untrusted peer sends a spoofed X-Forwarded-For, then it is ignored', async () => {
      // Only 10.0.0.0/8 is a trusted proxy, so the loopback test client is the client itself.
      const { app } = buildApp(deps, { env: { TRUST_PROXY: '10.0.0.0/8' } })
      const a = await createAccount(deps, { allowList: ['198.51.100.7/32'] })
      const res = await request(app)
        .post('/rest/auth/verify')
        .set(a.headers)
        .set('X-Forwarded-For', '198.51.100.7')
        .expect(403)
      expect(res.body.error.code).toBe('auth_ip_not_allowed')
    })

    it('when the client connects over IPv6 directly, then the v6 allow list applies', async () => {
      const { app } = buildApp(deps, { env: { TRUST_PROXY: '10.0.0.0/8' } })
      const ok = await createAccount(deps, { allowList: ['::1/128'] })
      const no = await createAccount(deps, { allowList: ['2001:db8::/32'] })
      const server = createServer(requestListener(app)).listen(0, '::1')
      await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject))
      try {
        const port = (server.address() as { port: number }).port
        const url = `http://[::1]:${port}`
        expect((await fetch(`${url}/rest/auth/verify`, { method: 'POST', headers: ok.headers })).status).toBe(
          200,
        )
        const refused = await fetch(`${url}/rest/auth/verify`, { method: 'POST', headers: no.headers })
        expect(refused.status).toBe(403)
        expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('auth_ip_not_allowed')
      } finally {
        server.closeAllConnections()
        await new Promise((r) => server.close(r))
      }
    })
  })

  describe('rate limit', () => {
    it('when a credential makes its 61st request in a minute, then 429 rate_limit_exceeded with reset_at and Retry-After', async () => {
      const server = await startTestServer(buildApp(deps).app)
      try {
        const a = await createAccount(deps)
        for (let i = 0; i < 60; i++) {
          const r = await fetch(`${server.url}/rest/quota`, { headers: a.headers })
          expect(r.status).toBe(200)
        }
        const res = await fetch(`${server.url}/rest/quota`, { headers: a.headers })
        expect(res.status).toBe(429)
        const body = (await res.json()) as { error: { code: string; details: { reset_at: string } } }
        expect(body.error.code).toBe('rate_limit_exceeded')
        const resetAt = Date.parse(body.error.details.reset_at)
        expect(resetAt).toBeGreaterThan(Date.now())
        expect(resetAt).toBeLessThanOrEqual(Date.now() + 61_000)
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
        // Another credential is not affected.
        const b = await createAccount(deps)
        expect((await fetch(`${server.url}/rest/quota`, { headers: b.headers })).status).toBe(200)
      } finally {
        await server.close()
      }
    })
  })

  it('when /openapi.json is fetched, then it is OpenAPI 3.1 listing the REST operations', async () => {
    const { app } = buildApp(deps)
    const res = await request(app).get('/openapi.json').expect(200)
    expect(res.body.openapi).toBe('3.1.0')
    expect(res.body.paths['/rest/auth/verify'].post.operationId).toBe('auth.verify')
    expect(res.body.paths['/rest/subdomains/{id}/renew'].post).toBeDefined()
    expect(res.body.paths['/rest/subdomains/{subdomain_id}/records/{id}'].patch).toBeDefined()
  })
})
