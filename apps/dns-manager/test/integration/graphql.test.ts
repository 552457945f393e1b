import { request } from '@quartet/core/testing'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

describe('GraphQL at /graphql', () => {
  it('when verifyCredentials is queried, then the account and quota come back', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps, { quota: 2 })
    const res = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: '{ verifyCredentials { account { api_key quota { used total available } } } }' })
      .expect(200)
    expect(res.body).toEqual({
      data: {
        verifyCredentials: { account: { api_key: a.apiKey, quota: { used: 0, total: 2, available: 2 } } },
      },
    })
  })

  it('when mutations create a subdomain and a record, then queries read them in one request under /api/v1', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const root = `${unique('gql')}.test`
    await addZone(deps, root)
    const created = await request(app)
      .post('/api/v1/graphql')
      .set(a.headers)
      .send({
        query:
          'mutation($s: String!, $r: String!) { createSubdomain(subdomain: $s, rootdomain: $r) { subdomain { id full_domain status } } }',
        variables: { s: 'gq', r: root },
      })
      .expect(200)
    const id = created.body.data.createSubdomain.subdomain.id
    await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `mutation { createDnsRecord(subdomain_id: ${id}, type: "TXT", content: "hi") { dns_record { id } } }`,
      })
      .expect(200)
    const read = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `{ quota { quota { used } } subdomains(per_page: 10) { subdomains { subdomain } next_cursor } dnsRecords(subdomain_id: ${id}) { dns_records { type content } } }`,
      })
      .expect(200)
    expect(read.body.data).toEqual({
      quota: { quota: { used: 1 } },
      subdomains: { subdomains: [{ subdomain: 'gq' }], next_cursor: null },
      dnsRecords: { dns_records: [{ type: 'TXT', content: 'hi' }] },
    })
  })

  it('when a resolver fails, then the error carries extensions.code and details', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: '{ subdomain(id: 424242) { subdomain { id } } }' })
    expect(res.body.errors[0]).toMatchObject({
      extensions: { code: 'subdomain_not_found' },
      path: ['subdomain'],
    })
    const bad = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: '{ subdomains(per_page: 9999) { next_cursor } }' })
    expect(bad.body.errors[0].extensions).toMatchObject({
      code: 'bad_request',
      details: { issues: [{ field: 'input.per_page' }] },
    })
  })

  it('when credentials are missing, then the error is auth_invalid_credentials with HTTP 401', async () => {
    const { app } = buildApp(deps)
    const res = await request(app)
      .post('/graphql')
      .send({ query: '{ verifyCredentials { account { api_key } } }' })
      .expect(401)
    expect(res.body.errors[0].extensions.code).toBe('auth_invalid_credentials')
  })

  it('when a query is too deep or selects too many fields, then it is refused before anything runs', async () => {
    const { app } = buildApp(deps, { env: { GRAPHQL_MAX_DEPTH: '3' } })
    const a = await createAccount(deps)
    const deep = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: '{ verifyCredentials { account { quota { used } } } }' })
    expect(deep.body.errors[0].extensions.code).toBe('bad_request')
    expect(deep.body.data).toBeUndefined()
    const { app: app2 } = buildApp(deps, { env: { GRAPHQL_MAX_FIELDS: '10' } })
    const wide = await request(app2)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `{ ${Array.from({ length: 11 }, (_, i) => `q${i}: quota { balance_cents }`).join(' ')} }`,
      })
    expect(wide.body.errors[0].message).toContain('limit')
  })

  it('when aliases repeat a field past the rate limit, then the aliases past 60 are refused with rate_limit_exceeded', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const query = `{ ${Array.from({ length: 65 }, (_, i) => `q${i}: quota { balance_cents }`).join(' ')} }`
    const res = await request(app).post('/graphql').set(a.headers).send({ query })
    const errors = res.body.errors as Array<{ extensions: { code: string; details: { reset_at: string } } }>
    expect(errors).toHaveLength(5)
    for (const e of errors)
      expect(e.extensions).toMatchObject({
        code: 'rate_limit_exceeded',
        details: { reset_at: expect.any(String) },
      })
    // The limit is shared with every style: REST is refused too now.
    await request(app).get('/rest/quota').set(a.headers).expect(429)
  })

  it('when several operations are sent as an HTTP batch, then they are refused (batching is off)', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send([{ query: '{ quota { balance_cents } }' }, { query: '{ quota { balance_cents } }' }])
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).toBeLessThan(500)
  })
})
