import { request, silentLogger } from '@quartet/core/testing'
import { buildDnsManager } from '../../src/app.ts'
import { createDb, type Db } from '../../src/store/db.ts'
import { addZone, createAccount, testConfig, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

const appOver = (db: Db) =>
  buildDnsManager({ config: testConfig(deps), logger: silentLogger(), db, kv: deps.kv }).app

/**
 * The test database, with its transactions (every write) failing as a refused connection does
 * while `outage.on` is set; plain queries (authentication, counts) still answer. Core maps the
 * driver's error to 503 service_unavailable with Retry-After.
 */
function writesFailing(outage: { on: boolean }): Db {
  return new Proxy(deps.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (prop !== '$transaction' || typeof value !== 'function') return value
      return (...args: unknown[]) =>
        outage.on
          ? Promise.reject(
              Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
            )
          : (value as (...a: unknown[]) => unknown).apply(target, args)
    },
  }) as Db
}

describe('a dependency outage is 503 service_unavailable with Retry-After in every call style', () => {
  it('when the database is unreachable, then REST and GraphQL answer 503, and JSON-RPC one -32016 error object (HTTP 200), all with Retry-After', async () => {
    const unreachable = createDb({
      url: 'postgresql://postgres@127.0.0.1:1/postgres',
      schema: deps.database.schema,
      poolSize: 1,
    })
    try {
      const app = appOver(unreachable)
      const headers = { 'X-API-Key': 'dnsm_x', 'X-API-Secret': 'y' }

      const rest = await request(app).get('/rest/quota').set(headers).expect(503)
      expect(rest.headers['retry-after']).toBe('5')
      expect(rest.body.error.code).toBe('service_unavailable')

      const rpc = await request(app)
        .post('/rpc')
        .set(headers)
        .send([
          { jsonrpc: '2.0', method: 'quota.get', id: 1 },
          { jsonrpc: '2.0', method: 'system.info', id: 2 },
        ])
        .expect(200)
      expect(rpc.headers['retry-after']).toBe('5')
      // Each call of the batch gets the error under its own id (issue 43).
      const outage = {
        code: -32016,
        message: 'service unavailable',
        data: { error_code: 'service_unavailable', http_status: 503, request_id: expect.any(String) },
      }
      expect(rpc.body).toEqual([
        { jsonrpc: '2.0', id: 1, error: outage },
        { jsonrpc: '2.0', id: 2, error: outage },
      ])

      const gql = await request(app)
        .post('/graphql')
        .set(headers)
        .send({ query: '{ quota { balance_cents } }' })
        .expect(503)
      expect(gql.headers['retry-after']).toBe('5')
      expect(gql.body).toEqual({
        errors: [
          {
            message: 'service unavailable',
            extensions: { code: 'service_unavailable', request_id: expect.any(String) },
          },
        ],
      })
    } finally {
      await unreachable.$disconnect()
    }
  })

  it('when one call of a JSON-RPC batch meets an outage, then the batch is 200 with that call failing, and Retry-After is kept', async () => {
    const a = await createAccount(deps)
    const root = `${unique('out')}.test`
    await addZone(deps, root)
    const outage = { on: false }
    const app = appOver(writesFailing(outage))
    const created = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'host', rootdomain: root })
      .expect(201)
    const id = created.body.subdomain.id as number
    outage.on = true
    const record = (content: string) => ({ subdomain_id: id, type: 'TXT', content })

    const batch = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send([
        { jsonrpc: '2.0', method: 'quota.get', id: 1 },
        { jsonrpc: '2.0', method: 'dns_records.create', params: record('x'), id: 2 },
      ])
      .expect(200)
    expect(batch.headers['retry-after']).toBe('5')
    expect(batch.body[0].result.quota).toEqual({ used: 1, total: 5, available: 4 })
    expect(batch.body[1].error).toMatchObject({
      code: -32016,
      data: { error_code: 'service_unavailable', http_status: 503 },
    })

    // A request whose only call meets the outage: its error object, HTTP 200 like every JSON-RPC
    // answer (issue 43), the header kept.
    const single = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'dns_records.create', params: record('y'), id: 3 })
      .expect(200)
    expect(single.headers['retry-after']).toBe('5')
    expect(single.body.error.data.error_code).toBe('service_unavailable')

    // REST and GraphQL name the same code with the same header; GraphQL's field error comes
    // beside its data (null), so its status is 200 (GraphQL over HTTP; issue 43).
    const rest = await request(app)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'TXT', content: 'z' })
      .expect(503)
    expect(rest.headers['retry-after']).toBe('5')
    expect(rest.body.error.code).toBe('service_unavailable')
    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `mutation { createDnsRecord(subdomain_id: ${id}, type: "TXT", content: "w") { dns_record { id } } }`,
      })
      .expect(200)
    expect(gql.headers['retry-after']).toBe('5')
    expect(gql.body.errors[0].extensions.code).toBe('service_unavailable')
    expect(gql.body.data).toEqual({ createDnsRecord: null })

    outage.on = false
    const list = await request(app).get(`/rest/subdomains/${id}/records`).set(a.headers).expect(200)
    expect(list.body.dns_records).toEqual([])
  })
})
