import { request } from '@quartet/core/testing'
import { buildApp, createAccount, type TestAccount, useDeps } from '../helpers.ts'

const deps = useDeps()
const GRAPHQL_RESPONSE = 'application/graphql-response+json'

/** Types within types within types: what graphql-js's MaxIntrospectionDepthRule refuses. */
const SELF_NESTING =
  '{ __schema { types { fields { type { fields { type { fields { type { name } } } } } } } } }'

const deepSelection = (levels: number) => `{ quota ${'{ quota '.repeat(levels)}${'}'.repeat(levels + 1)}`

/** The shape of every GraphQL error we send: our code, the request id, nothing of Yoga's. */
const ourError = (code: string) => ({
  message: expect.any(String),
  extensions: expect.objectContaining({ code, request_id: expect.any(String) }),
})

describe('GraphQL hardening', () => {
  let account: TestAccount
  let app: Parameters<typeof request>[0]
  beforeAll(async () => {
    app = buildApp(deps).app
    account = await createAccount(deps)
  })
  // As stock clients (Apollo Client, graphql-request) ask: request errors are 4xx in this media
  // type (GraphQL over HTTP); under application/json they are 200 (graphql.clients.test.ts).
  const post = (body: unknown) =>
    request(app)
      .post('/graphql')
      .set(account.headers)
      .set('Accept', GRAPHQL_RESPONSE)
      .send(body as object)

  describe('credentials come first', () => {
    it('when an anonymous caller sends a 4,000-level nested selection, then 401 auth_invalid_credentials, not a 500', async () => {
      const res = await request(app)
        .post('/graphql')
        .send({ query: deepSelection(4000) })
        .expect(401)
      expect(res.body).toEqual({ errors: [ourError('auth_invalid_credentials')] })
    })

    it('when an anonymous caller sends a document that does not parse, then 401: the document is not read before the credentials', async () => {
      const res = await request(app).post('/graphql').send({ query: '{ quota { ' }).expect(401)
      expect(res.body.errors[0].extensions.code).toBe('auth_invalid_credentials')
    })

    it('when an anonymous caller asks for the schema or misspells a field, then 401, no schema and no suggestion', async () => {
      for (const query of ['{ __schema { types { name } } }', '{ quot { balance_cents } }']) {
        const res = await request(app).post('/graphql').send({ query }).expect(401)
        expect(res.text).not.toMatch(/Did you mean|__schema|QuotaResult/)
      }
    })
  })

  describe('the Host header', () => {
    it.each(['%00', 'evil.example:99999', '[::1', 'a b', 'host/path', 'user@host', 'host?x', 'host#x'])(
      'when the Host header is %j, then 400 bad_request in the GraphQL shape, not a 500 with a stack trace',
      async (host) => {
        const res = await post({ query: '{ quota { balance_cents } }' }).set('Host', host).expect(400)
        expect(res.body).toEqual({ errors: [ourError('bad_request')] })
        expect(res.body.errors[0].extensions.details).toEqual({ field: 'host' })
      },
    )
  })

  it.each(['/GRAPHQL', '/graphql/', '/graphql/x', '/Api/V1/GraphQL'])(
    'when the path is %s (not the endpoint itself), then 404 not_found in the GraphQL shape',
    async (path) => {
      const res = await request(app)
        .post(path)
        .set(account.headers)
        .send({ query: '{ quota { balance_cents } }' })
        .expect(404)
      expect(res.body).toEqual({ errors: [ourError('not_found')] })
    },
  )

  it.each(['J#~', 'a b', 'https, http', ''])(
    'when a trusted proxy says X-Forwarded-Proto: %j, then the document runs (it was a 500)',
    async (proto) => {
      const res = await post({ query: '{ quota { balance_cents } }' })
        .set('X-Forwarded-Proto', proto)
        .expect(200)
      expect(res.body.data.quota.balance_cents).toEqual(expect.any(Number))
    },
  )

  it.each(['dns.localhost:8080', 'localhost:80', '[::1]:3003', '127.0.0.1'])(
    'when the Host header is %j, then the document runs',
    async (host) => {
      const res = await post({ query: '{ quota { balance_cents } }' }).set('Host', host).expect(200)
      expect(res.body.data.quota.balance_cents).toEqual(expect.any(Number))
    },
  )

  describe('limits, all answered 400 bad_request before anything runs', () => {
    it('when a caller sends a 4,000-level nested selection, then 400 bad_request naming the nesting limit', async () => {
      const res = await post({ query: deepSelection(4000) }).expect(400)
      expect(res.body.errors).toEqual([ourError('bad_request')])
      expect(res.body.errors[0].extensions.details).toMatchObject({ field: 'query', max_nesting: 16 })
    })

    it('when a document has more tokens than GRAPHQL_MAX_TOKENS, then the parser stops and 400 bad_request', async () => {
      const query = `{ ${Array.from({ length: 700 }, (_, i) => `a${i}: __typename`).join(' ')} }`
      const res = await post({ query }).expect(400)
      expect(res.body.errors).toMatchObject([ourError('bad_request')])
      expect(res.body.errors[0].message).toMatch(/2000 tokens/)
    })

    it('when a query is deeper than GRAPHQL_MAX_DEPTH through fragments, then 400 with the measured depth', async () => {
      const { app: shallow } = buildApp(deps, { env: { GRAPHQL_MAX_DEPTH: '3' } })
      const res = await request(shallow)
        .post('/graphql')
        .set(account.headers)
        .set('Accept', GRAPHQL_RESPONSE)
        .send({
          query:
            'query { ...Q } fragment Q on Query { verifyCredentials { ...V } } fragment V on VerifyResult { account { quota { used } } }',
        })
        .expect(400)
      expect(res.body.errors[0].extensions).toMatchObject({
        code: 'bad_request',
        details: { depth: 4, max_depth: 3 },
      })
      expect(res.body.data).toBeUndefined()
    })

    it('when aliases select more fields than GRAPHQL_MAX_FIELDS, then 400', async () => {
      const query = `{ ${Array.from({ length: 101 }, (_, i) => `q${i}: quota { balance_cents }`).join(' ')} }`
      const res = await post({ query }).expect(400)
      expect(res.body.errors[0].extensions).toMatchObject({
        code: 'bad_request',
        details: { fields: 202, max_fields: 200 },
      })
    })

    it('when fragments spread each other twice over, 40 deep, then the document is measured at once and refused', async () => {
      const fragments = Array.from(
        { length: 40 },
        (_, i) =>
          `fragment F${i} on Query { ${i === 39 ? '__typename' : `...F${i + 1} a${i}: __typename ...F${i + 1}`} }`,
      )
      const started = Date.now()
      const res = await post({ query: `{ ...F0 } ${fragments.join(' ')}` }).expect(400)
      expect(Date.now() - started).toBeLessThan(2000)
      expect(res.body.errors[0].extensions.code).toBe('bad_request')
      expect(res.body.errors[0].message).toMatch(/fields, more than the limit/)
    })

    it('when pages ask for more rows than GRAPHQL_MAX_COST allows, then 400; a per_page from a variable counts as the largest page', async () => {
      const { app: cheap } = buildApp(deps, { env: { GRAPHQL_MAX_COST: '1000' } })
      const page = (perPage: string) => `subdomains${perPage} { subdomains { id subdomain } next_cursor }`
      const send = (query: string, variables?: object) =>
        request(cheap)
          .post('/graphql')
          .set(account.headers)
          .set('Accept', GRAPHQL_RESPONSE)
          .send({ query, variables })
      // 1 + 100 rows × (subdomains, id, subdomain, next_cursor) = 401
      await send(`{ ${page('(per_page: 100)')} }`).expect(200)
      // 1 + 50 (the default page) × 4 = 201
      await send(`{ ${page('')} }`).expect(200)
      const big = await send(`{ ${page('(per_page: 300)')} }`).expect(400)
      expect(big.body.errors[0].extensions).toMatchObject({
        code: 'bad_request',
        details: { cost: 1201, max_cost: 1000 },
      })
      const variable = await send(`query($n: Int) { ${page('(per_page: $n)')} }`, { n: 10 }).expect(400)
      expect(variable.body.errors[0].extensions.details.cost).toBe(2001)
    })
  })

  describe('every parse, validation and coercion error carries extensions.code', () => {
    it.each([
      ['a syntax error', { query: '{ quota { ' }],
      ['an unknown field (no "Did you mean")', { query: '{ quot { balance_cents } }' }],
      [
        'a variable of the wrong type',
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: 'x' } },
      ],
      ['a missing variable', { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }' }],
      ['an unknown operation name', { query: 'query A { quota { balance_cents } }', operationName: 'B' }],
      ['types nested in types past graphql-js’s introspection limit', { query: SELF_NESTING }],
      ['variables that are not an object', { query: '{ quota { balance_cents } }', variables: [1] }],
      ['an unexpected parameter', { query: '{ quota { balance_cents } }', extra: 1 }],
      ['no query', { variables: {} }],
    ])('when the request has %s, then 400 bad_request in extensions.code', async (_name, body) => {
      const res = await post(body).expect(400)
      expect(res.body.errors.length).toBeGreaterThan(0)
      for (const e of res.body.errors) expect(e).toMatchObject(ourError('bad_request'))
      expect(res.text).not.toMatch(/Did you mean|GRAPHQL_|BAD_REQUEST/)
    })

    // Issue 43: introspection is on for authenticated callers; GRAPHQL_INTROSPECTION=off refuses it
    // (it was refused for everyone before) in words that say so.
    it.each([
      ['introspection', '{ __schema { types { name } } }'],
      ['a __type lookup', '{ __type(name: "Quota") { name } }'],
    ])(
      'when introspection is off and the request has %s, then 400 bad_request saying introspection is off',
      async (_name, query) => {
        const { app: closed } = buildApp(deps, { env: { GRAPHQL_INTROSPECTION: 'off' } })
        const res = await request(closed)
          .post('/graphql')
          .set(account.headers)
          .set('Accept', GRAPHQL_RESPONSE)
          .send({ query })
          .expect(400)
        expect(res.body.errors).toEqual([ourError('bad_request')])
        expect(res.body.errors[0].message).toMatch(/introspection is turned off/)
        expect(res.body.errors[0].message).toContain('/graphql/schema.graphql')
      },
    )

    it('when introspection is on, then __schema and __type answer an authenticated caller', async () => {
      const res = await post({ query: '{ __type(name: "Quota") { name fields { name } } }' }).expect(200)
      expect(res.body.data.__type).toEqual({
        name: 'Quota',
        fields: [{ name: 'used' }, { name: 'total' }, { name: 'available' }],
      })
    })

    it('when GET carries variables that are not JSON, then 400 bad_request naming variables', async () => {
      const res = await request(app)
        .get('/graphql?query=%7Bquota%7Bbalance_cents%7D%7D&variables=%7B')
        .set(account.headers)
        .expect(400)
      expect(res.body.errors).toEqual([ourError('bad_request')])
      expect(res.body.errors[0].extensions.details).toEqual({ field: 'variables' })
    })

    it('when GET carries a query and JSON variables, then it runs', async () => {
      const res = await request(app)
        .get('/api/v1/graphql')
        .query({ query: 'query($p: Int) { subdomains(per_page: $p) { next_cursor } }', variables: '{"p":2}' })
        .set(account.headers)
        .expect(200)
      expect(res.body).toEqual({ data: { subdomains: { next_cursor: null } } })
    })
  })

  describe('HTTP rules, answered in the GraphQL error shape', () => {
    it.each([
      ['text/plain', '{ quota { balance_cents } }'],
      ['application/graphql', '{ quota { balance_cents } }'],
      ['application/x-www-form-urlencoded', 'query=%7Bquota%7Bbalance_cents%7D%7D'],
    ])('when a POST is %s, then 415 unsupported_media_type, never an empty body', async (type, body) => {
      const res = await request(app)
        .post('/graphql')
        .set(account.headers)
        .set('Content-Type', type)
        .send(body)
        .expect(415)
      expect(res.body).toEqual({ errors: [ourError('unsupported_media_type')] })
    })

    it('when the JSON body is malformed, then 400 bad_request in the GraphQL shape', async () => {
      const res = await request(app)
        .post('/graphql')
        .set(account.headers)
        .set('Content-Type', 'application/json')
        .send('{"query":')
        .expect(400)
      expect(res.body).toEqual({ errors: [ourError('bad_request')] })
    })

    it('when several operations come as an array, then 400 (batching is off)', async () => {
      const res = await post([{ query: '{ quota { balance_cents } }' }]).expect(400)
      expect(res.body.errors[0].extensions.code).toBe('bad_request')
    })

    it('when a mutation comes by GET, or the method is PUT, then 405 method_not_allowed with Allow', async () => {
      const get = await request(app)
        .get('/graphql')
        .query({ query: 'mutation { createApiKey { key { id } } }' })
        .set(account.headers)
        .expect(405)
      expect(get.body.errors[0]).toMatchObject(ourError('method_not_allowed'))
      expect(get.headers.allow).toBe('POST')
      const put = await request(app).put('/graphql').set(account.headers).send({}).expect(405)
      expect(put.body.errors[0]).toMatchObject(ourError('method_not_allowed'))
      expect(put.headers.allow).toBe('GET, POST')
    })

    it('when the client accepts only text/html, then the answer is JSON all the same', async () => {
      const res = await post({ query: '{ quota { balance_cents } }' }).set('Accept', 'text/html').expect(200)
      expect(res.headers['content-type']).toMatch(/^application\/json/)
      expect(res.body.data.quota.balance_cents).toBe(0)
    })
  })

  describe('CORS: like the REST routes, none', () => {
    it('when another origin sends a preflight or a request with credentials, then no Access-Control-* header comes back, as on REST', async () => {
      const origin = 'https://evil.example'
      for (const path of ['/graphql', '/rest/quota']) {
        const preflight = await request(app)
          .options(path)
          .set('Origin', origin)
          .set('Access-Control-Request-Method', 'POST')
          .set('Access-Control-Request-Headers', 'x-api-key,x-api-secret,content-type')
        expect(preflight.status).toBeLessThan(300)
        expect(Object.keys(preflight.headers).filter((h) => h.startsWith('access-control-'))).toEqual([])
      }
      const res = await post({ query: '{ quota { balance_cents } }' }).set('Origin', origin).expect(200)
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([])
    })
  })
})
