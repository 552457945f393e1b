import { request } from '@quartet/core/testing'
import { buildApp, createAccount, type TestAccount, useDeps } from '../helpers.ts'

const deps = useDeps()

/** The bodies of issue 48: 20 KB that nest 10,000 deep (core's limit is 64). */
const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth)
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
/** Deep, then wrapped as the request each protocol takes, so only the nesting is wrong. */
const deepRpcCall = (depth: number) =>
  `{"jsonrpc":"2.0","method":"quota.get","id":1,"params":{"x":${deepObject(depth)}}}`
const deepGraphQL = (depth: number) =>
  `{"query":"{ quota { balance_cents } }","variables":{"v":${deepObject(depth)}}}`

/**
 * Two ways in: a plain JSON body takes the route core answers before express (the hot path);
 * `Content-Encoding: identity` is read by express.json instead. Both must refuse the same way.
 */
const paths = [
  ['the hot path', {}],
  ['express.json', { 'Content-Encoding': 'identity' }],
] as const

describe('JSON nested deeper than core allows (issue 48)', () => {
  let app: Parameters<typeof request>[0]
  let account: TestAccount
  beforeAll(async () => {
    app = buildApp(deps).app
    account = await createAccount(deps)
  })

  describe.each(paths)('through %s', (_label, extra) => {
    it.each([
      ['[ × 10000', deepArray(10_000)],
      ['{"a": × 10000', deepObject(10_000)],
      ['a call whose params nest 5000 deep', deepRpcCall(5_000)],
    ])(
      'when POST /rpc gets %s without credentials, then one -32600 invalid request naming the limit, not a 500',
      async (_name, body) => {
        const res = await request(app)
          .post('/rpc')
          .set({ 'Content-Type': 'application/json', ...extra })
          .send(body)
        expect(res.status).toBe(200)
        expect(res.body).toEqual({
          jsonrpc: '2.0',
          id: null,
          error: {
            code: -32600,
            message: expect.stringMatching(/deeper than 64 levels/),
            data: { error_code: 'bad_request', http_status: 400, details: { max_depth: 64 } },
          },
        })
        expect(res.headers['cache-control']).toBe('no-store')
      },
    )

    it.each([
      ['{"a": × 10000', deepObject(10_000)],
      ['variables nesting 5000 deep', deepGraphQL(5_000)],
    ])(
      'when POST /graphql gets %s, then 400 with a GraphQL error bad_request naming the limit',
      async (_name, body) => {
        const res = await request(app)
          .post('/graphql')
          .set({ 'Content-Type': 'application/json', ...extra })
          .send(body)
        expect(res.status).toBe(400)
        expect(res.body).toEqual({
          errors: [
            {
              message: expect.stringMatching(/deeper than 64 levels/),
              extensions: expect.objectContaining({
                code: 'bad_request',
                details: { max_depth: 64 },
                request_id: expect.any(String),
              }),
            },
          ],
        })
      },
    )
  })

  it('when a REST call gets a body nesting 10000 deep, then 400 in the REST envelope naming the limit', async () => {
    const res = await request(app)
      .post('/rest/subdomains')
      .set(account.headers)
      .set('Content-Type', 'application/json')
      .send(deepObject(10_000))
    expect(res.status).toBe(400)
    expect(res.body).toEqual({
      success: false,
      error: {
        code: 'bad_request',
        message: expect.stringMatching(/deeper than 64 levels/),
        details: { max_depth: 64 },
      },
      request_id: expect.any(String),
    })
  })

  it.each([
    ['with credentials', () => account.headers],
    ['anonymously (checked before credentials, as a POST body is)', () => ({})],
  ])(
    'when GET /graphql carries variables or extensions nesting 3000 deep %s, then 400 bad_request naming the parameter and the limit',
    async (_label, headers) => {
      for (const name of ['variables', 'extensions']) {
        const res = await request(app)
          .get(
            `/graphql?query=${encodeURIComponent('{ quota { balance_cents } }')}&${name}=${deepArray(3000)}`,
          )
          .set(headers())
        expect(res.status).toBe(400)
        expect(res.body.errors[0].extensions).toMatchObject({
          code: 'bad_request',
          details: { field: name, max_depth: 64 },
        })
      }
    },
  )

  it('when a body nests exactly 64 deep, then it is read as usual (the limit is inclusive)', async () => {
    const res = await request(app)
      .post('/rpc')
      .set(account.headers)
      .set('Content-Type', 'application/json')
      // The call object is one level, params a second: 62 more inside.
      .send(`{"jsonrpc":"2.0","method":"quota.get","id":1,"params":{"x":${deepArray(62)}}}`)
    expect(res.status).toBe(200)
    // Not refused for its depth: quota.get rejects the unknown parameter like any other.
    expect(res.body.error?.code).not.toBe(-32600)
    expect(res.body.error?.data?.details?.max_depth).toBeUndefined()
  })

  it('when brackets sit inside strings, then they do not count as nesting', async () => {
    const res = await request(app)
      .post('/rpc')
      .set(account.headers)
      .set('Content-Type', 'application/json')
      .send(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'quota.get',
          id: 1,
          params: { note: '[{'.repeat(500) + '\\"' },
        }),
      )
    expect(res.status).toBe(200)
    expect(res.body.error?.code).not.toBe(-32600)
  })
})
