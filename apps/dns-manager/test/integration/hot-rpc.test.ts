import type { Express } from 'express'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'
import { answersOn, listen, parity, send } from '../support/hot-parity.ts'

/**
 * JSON-RPC answered before express (rpcHotRoutes, core's JSON body hot routes) gives the answer
 * express gives the same request: each request is sent to `/rpc` (the hot route takes it when
 * its body is a plain JSON body) and to `/rpc/` (express's router, always), with the same
 * X-Request-Id, and status, headers and body must agree. The metrics then show which path
 * answered (`/rpc` is the hot route's label, `/rpc/` express's).
 */
const deps = useDeps()

/** How many answers the metrics count under each route label of /rpc. */
async function answeredBy(app: Express): Promise<{ hot: number; express: number }> {
  // Express counts a body it refused before its router (rpcBodyErrors) as `unmatched`.
  const [hot, express] = await Promise.all([
    answersOn(app, (route) => route === '/rpc' || route === '/api/v1/rpc'),
    answersOn(app, (route) => ['/rpc/', '/api/v1/rpc/', 'unmatched'].includes(route)),
  ])
  return { hot, express }
}

describe('JSON-RPC before express', () => {
  /** Sends the same request hot and through express; expects the same answer; returns it. */
  const both = parity({
    idPrefix: 'rpc-parity',
    paths: (prefix) => ({ hot: `${prefix}/rpc`, express: `${prefix}/rpc/` }),
    shown: 80,
  })

  it('when calls, batches, notifications and protocol errors are sent, then the hot route answers each as express does', async () => {
    const { app } = buildApp(deps, { env: { RPC_MAX_BATCH: '5' } })
    const { url, close } = await listen(app)
    try {
      const zone = `${unique('hotrpc')}.test`
      await addZone(deps, zone)
      const a = await createAccount(deps, { quota: 3 })
      const json = { ...a.headers, 'Content-Type': 'application/json' }
      const made = await send(
        url,
        '/rpc',
        json,
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'subdomains.create',
          params: { subdomain: 'www1', rootdomain: zone },
        }),
      )
      expect(made.status).toBe(200)
      const id = JSON.parse(made.text).result.subdomain.id as number
      const bodies: unknown[] = [
        { jsonrpc: '2.0', id: 1, method: 'quota.get' },
        { jsonrpc: '2.0', id: 'v', method: 'auth.verify' },
        { jsonrpc: '2.0', id: null, method: 'subdomains.list', params: { per_page: 2 } },
        { jsonrpc: '2.0', id: 2, method: 'records.list', params: { subdomain_id: id } },
        { jsonrpc: '2.0', id: 3, method: 'records.list', params: { subdomain_id: 'x' } },
        { jsonrpc: '2.0', id: 4, method: 'records.list', params: [1] },
        { jsonrpc: '2.0', id: 5, method: 'no.such' },
        { jsonrpc: '1.0', id: 6, method: 'quota.get' },
        { jsonrpc: '2.0', id: {}, method: 'quota.get' },
        [
          { jsonrpc: '2.0', id: 1, method: 'quota.get' },
          { jsonrpc: '2.0', method: 'quota.get' },
          { jsonrpc: '2.0', method: 'no.such' },
          1,
          { jsonrpc: '2.0', id: 9, method: 'subdomains.get', params: { id: 999999999 } },
        ],
        [],
        [1, 2, 3],
        Array.from({ length: 6 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'quota.get' })),
        { jsonrpc: '2.0', method: 'quota.get' },
        [{ jsonrpc: '2.0', method: 'quota.get' }],
        { jsonrpc: '2.0', id: 7, method: 'quota.get', params: { 'a\u0000': 1 } },
      ]
      for (const body of bodies) await both(url, json, JSON.stringify(body))
      // The same under /api/v1, and a charset the hot route reads too.
      await both(url, json, JSON.stringify(bodies[0]), { prefix: '/api/v1' })
      await both(
        url,
        { ...json, 'Content-Type': 'Application/JSON; charset="UTF-8"' },
        JSON.stringify(bodies[0]),
      )
      // Notifications only: no body, 204.
      const quiet = await both(url, json, JSON.stringify([{ jsonrpc: '2.0', method: 'quota.get' }]))
      expect([quiet.status, quiet.text]).toEqual([204, ''])
      // Refused credentials: one error object for the whole request, HTTP 200 (issue 43).
      const refused = await both(
        url,
        { 'Content-Type': 'application/json' },
        JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'quota.get' }]),
      )
      expect(refused.status).toBe(200)
      const counted = await answeredBy(app)
      // Every request of this test but the one to /rpc/ of each pair was the hot route's.
      expect(counted.hot).toBe(counted.express + 1)
    } finally {
      await close()
    }
  })

  it('when the body is malformed, not UTF-8, against the input rule, or unusual in its framing, then the answer is express’s, and only plain JSON bodies took the hot route', async () => {
    const { app } = buildApp(deps, { env: { BODY_LIMIT: '2kb' } })
    const { url, close } = await listen(app)
    try {
      const a = await createAccount(deps)
      const json = { ...a.headers, 'Content-Type': 'application/json' }
      const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'quota.get' })
      const hotCases: Array<[string, Buffer | string, number]> = [
        ['malformed', '{"jsonrpc":', 200],
        ['a JSON string (strict mode)', '"quota.get"', 200],
        ['null', 'null', 200],
        ['whitespace only', '  \n', 200],
        ['byte order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(call)]), 200],
        ['not UTF-8', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]), 400],
        // Read as JSON, refused by the input rule: 200, like every JSON-RPC request (issue 43).
        ['NUL in a string', '{"jsonrpc":"2.0","id":1,"method":"quota\\u0000get"}', 200],
        ['lone surrogate', '{"jsonrpc":"2.0","id":"\\ud800","method":"quota.get"}', 200],
        ['NUL in a key', '[{"jsonrpc":"2.0","id":1,"method":"quota.get","params":{"\\u0000":1}}]', 200],
        ['at the limit', `{"jsonrpc":"2.0","id":"${'x'.repeat(2048 - 46)}","method":"quota.get"}`, 200],
      ]
      for (const [what, body, status] of hotCases) {
        const before = await answeredBy(app)
        const answer = await both(url, json, body)
        expect([what, answer.status]).toEqual([what, status])
        const after = await answeredBy(app)
        expect([what, after.hot - before.hot]).toEqual([what, 1])
      }
      const parse = await both(url, json, '{')
      expect(JSON.parse(parse.text)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } })
      const nul = await both(url, json, '{"jsonrpc":"2.0","id":1,"method":"quota\\u0000get"}')
      expect(JSON.parse(nul.text)).toMatchObject({ error: { data: { error_code: 'bad_request' } } })

      // Left to express (each pair answered by express twice): over the limit, another type, a
      // charset express.json refuses, a compressed or chunked body.
      const expressCases: Array<[string, Record<string, string>, Buffer | string, number, boolean?]> = [
        ['over the limit', json, `{"id":"${'x'.repeat(2048)}"}`, 413],
        ['text/plain', { ...a.headers, 'Content-Type': 'text/plain' }, call, 200],
        ['no type', a.headers, call, 200],
        ['latin-1', { ...json, 'Content-Type': 'application/json; charset=latin1' }, call, 415],
        ['gzip', { ...json, 'Content-Encoding': 'gzip' }, call, 400],
        ['unknown encoding', { ...json, 'Content-Encoding': 'zz' }, call, 415],
        ['chunked', json, call, 200, true],
      ]
      for (const [what, headers, body, status, chunked] of expressCases) {
        const before = await answeredBy(app)
        const answer = await both(url, headers, body, { chunked: chunked ?? false })
        expect([what, answer.status]).toEqual([what, status])
        const after = await answeredBy(app)
        expect([what, after.hot - before.hot, after.express - before.express]).toEqual([what, 0, 2])
      }
    } finally {
      await close()
    }
  })
})
