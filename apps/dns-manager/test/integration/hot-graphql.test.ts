import { metricsRegistryOf } from '@quartet/core/http'
import type { Express } from 'express'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'
import { answersOn, listen, parity, send } from '../support/hot-parity.ts'

/**
 * GraphQL answered before express (createGraphQL's hot routes: documents parsed and validated
 * once, executed with graphql-js) gives the answer express + Yoga give the same request: each
 * request is sent to `/graphql` (the hot route takes a plain JSON body) and to
 * `/graphql?via=express` (a query string: express and Yoga, always), with the same
 * X-Request-Id, and status, headers and body must agree, byte for byte.
 */
const deps = useDeps()

/** GraphQL operations by executor (dns_manager_graphql_executions_total). */
async function executions(app: Express): Promise<{ compiled: number } & Record<string, number>> {
  const text = await metricsRegistryOf(app)!.getSingleMetricAsString('dns_manager_graphql_executions_total')
  const counts: { compiled: number } & Record<string, number> = { compiled: 0 }
  for (const m of text.matchAll(/executor="([^"]+)"[^}]*} (\d+)/g)) counts[m[1]!] = Number(m[2])
  return counts
}

/** How many answers the metrics count on the hot route (its label is the endpoint). */
const hotCount = (app: Express) => answersOn(app, (route) => /^(\/api\/v1)?\/graphql$/.test(route))

describe('GraphQL before express', () => {
  const both = parity({
    idPrefix: 'gql-parity',
    paths: (prefix) => ({ hot: `${prefix}/graphql`, express: `${prefix}/graphql?via=express` }),
    shown: 120,
  })

  it('when documents run, fail validation, limits, variables or resolvers, then the hot route answers each as Yoga does', async () => {
    const { app } = buildApp(deps, {
      env: { GRAPHQL_MAX_DEPTH: '4', GRAPHQL_MAX_FIELDS: '30', RATE_LIMIT_PER_MINUTE: '10000' },
    })
    const { url, close } = await listen(app)
    try {
      const zone = `${unique('hotgql')}.test`
      await addZone(deps, zone)
      const a = await createAccount(deps, { quota: 3 })
      const json = { ...a.headers, 'Content-Type': 'application/json' }
      const made = await send(
        url,
        '/graphql',
        json,
        JSON.stringify({
          query: `mutation { createSubdomain(subdomain: "www1", rootdomain: "${zone}") { subdomain { id } } }`,
        }),
      )
      expect(made.status).toBe(200)
      const id = JSON.parse(made.text).data.createSubdomain.subdomain.id as number
      const requests: unknown[] = [
        { query: '{ quota { quota { used total available } balance_cents } }' },
        { query: '{ verifyCredentials { account { api_key quota { used total available } } } }' },
        {
          query: `{ quota { quota { used } } subdomains(per_page: 10) { subdomains { subdomain } next_cursor } dnsRecords(subdomain_id: ${id}) { dns_records { type content } } }`,
        },
        { query: 'query Q($p: Int) { subdomains(per_page: $p) { next_cursor } }', variables: { p: 1 } },
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: 'x' } },
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }' },
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: 424242 } },
        { query: `{ a: subdomain(id: 424242) { subdomain { id } } b: quota { balance_cents } }` },
        { query: 'query A { quota { balance_cents } }', operationName: 'B' },
        { query: 'query A { quota { balance_cents } } query B { quota { balance_cents } }' },
        {
          query: 'query A { quota { balance_cents } } query B { quota { balance_cents } }',
          operationName: 'B',
        },
        { query: '{ quota { balance_cents } }', operationName: null, variables: null, extensions: {} },
        { query: '{ subdomains(per_page: 9999) { next_cursor } }' },
        { query: '{ quota { ' },
        { query: '{ quot { balance_cents } }' },
        { query: '{ __schema { types { name } } }' },
        { query: '{ __typename }' },
        { query: '{ verifyCredentials { account { quota { used } } } }' },
        { query: `{ ${Array.from({ length: 31 }, (_, i) => `q${i}: quota { balance_cents }`).join(' ')} }` },
        { query: '{ quota { balance_cents } }', variables: [1] },
        { query: '{ quota { balance_cents } }', extra: 1 },
        { variables: {} },
        [{ query: '{ quota { balance_cents } }' }],
        { query: '{ quota { balance_cents } }', variables: { 'x\u0000': 1 } },
        { query: `{{{{{{{{{{{{{{{{{{{{ quota }}}}}}}}}}}}}}}}}}}}` },
        {
          // A write refused by the domain (the same answer each time: it changes nothing).
          query: `mutation { createDnsRecord(subdomain_id: 424242, type: "TXT", content: "hi") { dns_record { id } } }`,
        },
        {
          query: `mutation { createDnsRecord(subdomain_id: ${id}, type: "NOPE", content: "hi") { dns_record { id } } }`,
        },
        { query: 'subscription { quota { balance_cents } }' },
        // What runs compiled on its third time: errors inside fragments, several errors, merged
        // fields, __typename, a page with every field, and variables graphql-js refuses.
        {
          query:
            'query Q { ...F } fragment F on Query { subdomain(id: 424242) { subdomain { id } } quota { balance_cents } }',
        },
        {
          query: '{ ... on Query { x: subdomain(id: 424242) { subdomain { id } } } quota { balance_cents } }',
        },
        {
          query: `query($p: Int, $i: Int!) { subdomains(per_page: $p) { subdomains { __typename id subdomain rootdomain full_domain status created_at updated_at expires_at never_expires } next_cursor } quota { quota { used total available } balance_cents } subdomain(id: $i) { subdomain { id subdomain } } }`,
          variables: { p: 2, i: id },
        },
        {
          query:
            '{ s: subdomains(per_page: 1) { subdomains { id } } s: subdomains(per_page: 1) { next_cursor } }',
        },
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: 2147483648 } },
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: null } },
      ]
      // Repeated queries run compiled (graphql-jit), loaded with the first query: wait for it.
      const warm = JSON.stringify({ query: '{ quota { balance_cents } }' })
      for (let i = 0; (await executions(app)).compiled === 0; i++) {
        if (i === 100) throw new Error('no query ran compiled')
        await send(url, '/graphql', json, warm)
        await new Promise((r) => setTimeout(r, 20))
      }
      const before = await executions(app)
      for (const body of requests) {
        // Three times: the second run finds the document in the cache, the third runs a query compiled.
        for (let i = 0; i < 3; i++) await both(url, json, JSON.stringify(body))
      }
      // Documents of each outcome as Apollo Client asks for them: application/graphql-response+json,
      // with its status rules (a request error is 400 there, 200 under application/json).
      const asApollo = { ...json, Accept: 'application/graphql-response+json,application/json;q=0.9' }
      const outcomes: unknown[] = [
        requests[0], // data
        { query: `{ a: subdomain(id: 424242) { subdomain { id } } b: quota { balance_cents } }` }, // partial
        { query: 'query($i: Int!) { subdomain(id: $i) { subdomain { id } } }', variables: { i: 'x' } }, // variables
        { query: '{ quota { ' }, // parse
        { query: '{ quot { balance_cents } }' }, // validation
        { query: '{ verifyCredentials { account { quota { used } } } }' }, // a limit
        { query: 'query A { quota { balance_cents } }', operationName: 'B' }, // Yoga's executor
        { query: `{{{{{{{{{{{{{{{{{{{{ quota }}}}}}}}}}}}}}}}}}}}` }, // nesting, before parsing
      ]
      for (const body of outcomes) await both(url, asApollo, JSON.stringify(body))
      // Two failing root fields: graphql-js lists errors in the order their resolvers fail, which
      // two reads running side by side do not fix; the same errors either way.
      const twoFailing = JSON.stringify({
        query:
          '{ a: subdomain(id: 424241) { subdomain { id } } b: subdomain(id: 424242) { subdomain { id } } c: quota { balance_cents } }',
      })
      const byPath = (text: string) => {
        const answer = JSON.parse(text) as { errors: Array<{ path: string[] }> }
        return { ...answer, errors: answer.errors.sort((x, y) => x.path[0]!.localeCompare(y.path[0]!)) }
      }
      for (let i = 0; i < 3; i++) {
        const headers = { ...json, 'X-Request-Id': `gql-two-${i}` }
        const hot = await send(url, '/graphql', headers, twoFailing)
        const viaExpress = await send(url, '/graphql?via=express', headers, twoFailing)
        expect([hot.status, byPath(hot.text)]).toEqual([viaExpress.status, byPath(viaExpress.text)])
        expect(byPath(hot.text).errors).toHaveLength(2)
      }
      const after = await executions(app)
      // Every query that ran (not Yoga's) on its third time: the valid ones compiled, those whose
      // variables fail on graphql-js (no resolver ran in either).
      expect(after.compiled - before.compiled).toBeGreaterThanOrEqual(8)
      await both(url, json, JSON.stringify(requests[0]), { prefix: '/api/v1' })
      // Refused credentials and an address off the allow list: the gate's answers.
      await both(url, { 'Content-Type': 'application/json' }, JSON.stringify(requests[0]))
      await both(
        url,
        { Accept: asApollo.Accept, 'Content-Type': 'application/json' },
        JSON.stringify(requests[0]),
      )
      const fenced = await createAccount(deps, { allowList: ['203.0.113.0/24'] })
      await both(url, { ...fenced.headers, 'Content-Type': 'application/json' }, JSON.stringify(requests[0]))
      expect(await hotCount(app)).toBeGreaterThanOrEqual(3 * requests.length + 3)
    } finally {
      await close()
    }
  })

  it('when the body is malformed, not UTF-8, against the input rule or unusual in its framing, then the answer is express’s', async () => {
    const { app } = buildApp(deps, { env: { BODY_LIMIT: '2kb' } })
    const { url, close } = await listen(app)
    try {
      const a = await createAccount(deps)
      const json = { ...a.headers, 'Content-Type': 'application/json' }
      const query = JSON.stringify({ query: '{ quota { balance_cents } }' })
      const cases: Array<[string, Record<string, string>, Buffer | string, number, boolean, boolean?]> = [
        ['malformed', json, '{"query":', 400, true],
        ['strict mode', json, '"{ quota { balance_cents } }"', 400, true],
        ['not UTF-8', json, Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), 400, true],
        ['NUL', json, '{"query":"{ quota { balance_cents } }\\u0000"}', 400, true],
        [
          'byte order mark',
          json,
          Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(query)]),
          200,
          true,
        ],
        ['over the limit', json, `{"query":"${'x'.repeat(2048)}"}`, 413, false],
        ['text/plain', { ...a.headers, 'Content-Type': 'text/plain' }, query, 415, false],
        ['gzip', { ...json, 'Content-Encoding': 'gzip' }, query, 400, false],
        ['chunked', json, query, 200, false, true],
      ]
      for (const [what, headers, body, status, hot, chunked] of cases) {
        const before = await hotCount(app)
        const answer = await both(url, headers, body, { chunked: chunked ?? false })
        expect([what, answer.status]).toEqual([what, status])
        expect([what, (await hotCount(app)) - before]).toEqual([what, hot ? 1 : 0])
      }
    } finally {
      await close()
    }
  })
})
