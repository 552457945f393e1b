import { request } from '@quartet/core/testing'
import { addZone, buildApp, createAccount, type TestAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

/**
 * Strings with NUL reach Postgres and were 500s (issue #19). Core's input rule answers 400
 * bad_request naming the field; these prove every style gets there for the inputs that failed.
 */
describe('a NUL character in an input is 400 bad_request naming the field, in every style', () => {
  let app: Parameters<typeof request>[0]
  let a: TestAccount
  let subdomainId: number
  let root: string
  beforeAll(async () => {
    app = buildApp(deps).app
    a = await createAccount(deps)
    root = `${unique('nul')}.test`
    await addZone(deps, root)
    const created = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'host', rootdomain: root })
      .expect(201)
    subdomainId = created.body.subdomain.id as number
  })

  const fieldOf = (details: { field?: string; issues?: Array<{ field: string }> } | undefined) =>
    details?.field ?? details?.issues?.[0]?.field ?? ''

  describe('REST', () => {
    it.each([
      ['?search', '/rest/subdomains?search=a%00b', 'query.search'],
      ['?rootdomain', '/rest/subdomains?rootdomain=x%00.test', 'query.rootdomain'],
      ['?search under /api/v1', '/api/v1/rest/subdomains?search=%00', 'query.search'],
    ])('when %s holds NUL, then 400 naming it', async (_name, path, field) => {
      const res = await request(app).get(path).set(a.headers).expect(400)
      expect(res.body.error.code).toBe('bad_request')
      expect(fieldOf(res.body.error.details)).toBe(field)
    })

    it('when the body rootdomain holds NUL, then 400 naming rootdomain', async () => {
      const res = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: 'other', rootdomain: `${root}\u0000` })
        .expect(400)
      expect(res.body.error.code).toBe('bad_request')
      expect(fieldOf(res.body.error.details)).toBe('body.rootdomain')
    })

    it('when a record content holds NUL, then 400 naming content, on create and on update', async () => {
      const res = await request(app)
        .post(`/rest/subdomains/${subdomainId}/records`)
        .set(a.headers)
        .send({ type: 'TXT', content: 'a\u0000b' })
        .expect(400)
      expect(res.body.error.code).toBe('bad_request')
      expect(fieldOf(res.body.error.details)).toBe('body.content')
      const record = await request(app)
        .post(`/rest/subdomains/${subdomainId}/records`)
        .set(a.headers)
        .send({ type: 'TXT', content: 'fine' })
        .expect(201)
      const update = await request(app)
        .patch(`/rest/subdomains/${subdomainId}/records/${record.body.dns_record.id}`)
        .set(a.headers)
        .send({ content: '\u0000' })
        .expect(400)
      expect(fieldOf(update.body.error.details)).toBe('body.content')
    })
  })

  describe('JSON-RPC', () => {
    it.each([
      ['search', 'subdomains.list', { search: 'a\u0000' }],
      ['rootdomain', 'subdomains.list', { rootdomain: '\u0000' }],
      ['rootdomain', 'subdomains.create', { subdomain: 'rpc', rootdomain: 'x.test\u0000' }],
      ['content', 'dns_records.create', { subdomain_id: 1, type: 'TXT', content: '\u0000' }],
    ])(
      'when params.%s of %s holds NUL, then 200 with one -32602 bad_request naming it',
      async (field, method, params) => {
        const res = await request(app)
          .post('/rpc')
          .set(a.headers)
          .send({ jsonrpc: '2.0', method, params, id: 1 })
          .expect(200)
        expect(res.body).toMatchObject({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32602, data: { error_code: 'bad_request' } },
        })
        expect(fieldOf(res.body.error.data.details)).toBe(`body.params.${field}`)
      },
    )

    it('when one call of a batch holds NUL, then the whole body is refused before any call runs', async () => {
      const res = await request(app)
        .post('/rpc')
        .set(a.headers)
        .send([
          {
            jsonrpc: '2.0',
            method: 'subdomains.create',
            params: { subdomain: 'batch', rootdomain: root },
            id: 1,
          },
          { jsonrpc: '2.0', method: 'subdomains.list', params: { search: '\u0000' }, id: 2 },
        ])
        .expect(200)
      expect(fieldOf(res.body.error.data.details)).toBe('body.1.params.search')
      const list = await request(app).get('/rest/subdomains?search=batch').set(a.headers).expect(200)
      expect(list.body.subdomains).toEqual([])
    })
  })

  describe('GraphQL', () => {
    it('when arguments hold NUL (search, rootdomain, content), then each field fails with bad_request naming it', async () => {
      const res = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({
          query: `mutation {
            a: createSubdomain(subdomain: "gql", rootdomain: "${root}\\u0000") { subdomain { id } }
            b: createDnsRecord(subdomain_id: ${subdomainId}, type: "TXT", content: "x\\u0000") { dns_record { id } }
          }`,
        })
        // Field errors beside data: 200 (GraphQL over HTTP; issue 43).
        .expect(200)
      expect(res.body.data).toEqual({ a: null, b: null })
      const byPath = Object.fromEntries(
        (res.body.errors as Array<{ path: string[]; extensions: { code: string; details: object } }>).map(
          (e) => [e.path[0], e.extensions],
        ),
      )
      expect(byPath.a!.code).toBe('bad_request')
      expect(fieldOf(byPath.a!.details)).toBe('rootdomain')
      expect(byPath.b!.code).toBe('bad_request')
      expect(fieldOf(byPath.b!.details)).toBe('content')

      const list = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({
          query:
            '{ s: subdomains(search: "\\u0000") { next_cursor } r: subdomains(rootdomain: "\\u0000") { next_cursor } }',
        })
        .expect(200)
      expect(list.body.errors.map((e: { extensions: { code: string } }) => e.extensions.code)).toEqual([
        'bad_request',
        'bad_request',
      ])
    })

    it('when variables hold NUL, then 400 bad_request naming the variable, whether or not an argument uses it', async () => {
      const used = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({
          query: 'query($s: String) { subdomains(search: $s) { next_cursor } }',
          variables: { s: 'a\u0000' },
        })
        .expect(400)
      expect(used.body.errors[0].extensions.code).toBe('bad_request')
      expect(fieldOf(used.body.errors[0].extensions.details)).toBe('body.variables.s')

      const unused = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({ query: '{ quota { balance_cents } }', variables: { x: '\u0000' } })
        .expect(400)
      expect(unused.body.errors[0].extensions.code).toBe('bad_request')
      expect(fieldOf(unused.body.errors[0].extensions.details)).toBe('body.variables.x')

      const get = await request(app)
        .get('/graphql')
        .query({
          query: 'query($r: String) { subdomains(rootdomain: $r) { next_cursor } }',
          variables: '{"r":"\\u0000"}',
        })
        .set(a.headers)
        .expect(400)
      expect(get.body.errors[0].extensions.code).toBe('bad_request')
      // Decoded from the JSON in the query string, after the URL was checked: core's parseInput catches it.
      expect(fieldOf(get.body.errors[0].extensions.details)).toBe('query.variables.r')
    })
  })
})
