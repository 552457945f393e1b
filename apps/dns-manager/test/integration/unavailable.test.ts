import { ApiError } from '@quartet/core/errors'
import { silentLogger } from '@quartet/core/testing'
import request from 'supertest'
import { buildDnsManager } from '../../src/app.ts'
import type { DnsProvider } from '../../src/domain/provider.ts'
import type { Db } from '../../src/store/db.ts'
import { addZone, createAccount, testConfig, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

/** What core's dependency-outage mapping answers: 503 service_unavailable with Retry-After. */
const outage = () =>
  new ApiError('service_unavailable', 'the database did not answer in time', undefined, {
    headers: { 'Retry-After': '7' },
  })

/** The app over a database whose raw queries (authentication's lookup among them) fail while `down` is set. */
function appWith(options: { databaseDown?: () => boolean; provider?: DnsProvider } = {}) {
  const db = new Proxy(deps.db, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown
      if (prop !== '$queryRawUnsafe' || typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (options.databaseDown?.()) return Promise.reject(outage())
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  }) as Db
  return buildDnsManager({
    config: testConfig(deps),
    logger: silentLogger(),
    db,
    kv: deps.kv,
    ...(options.provider ? { provider: options.provider } : {}),
  }).app
}

/** An upstream that is out: every change answers 503 with Retry-After. */
const providerOut: DnsProvider = {
  kind: 'database',
  applyRRsets: () => Promise.reject(outage()),
}

describe('a dependency outage is 503 service_unavailable with Retry-After in every call style', () => {
  it('when the database is down during authentication, then REST, JSON-RPC and GraphQL answer 503 with Retry-After', async () => {
    const a = await createAccount(deps)
    const app = appWith({ databaseDown: () => true })

    const rest = await request(app).get('/rest/quota').set(a.headers).expect(503)
    expect(rest.headers['retry-after']).toBe('7')
    expect(rest.body).toEqual({
      success: false,
      error: { code: 'service_unavailable', message: 'service unavailable' },
      request_id: expect.any(String),
    })

    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send([
        { jsonrpc: '2.0', method: 'quota.get', id: 1 },
        { jsonrpc: '2.0', method: 'system.info', id: 2 },
      ])
      .expect(503)
    expect(rpc.headers['retry-after']).toBe('7')
    expect(rpc.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32016, data: { error_code: 'service_unavailable', http_status: 503 } },
    })

    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: '{ quota { balance_cents } }' })
      .expect(503)
    expect(gql.headers['retry-after']).toBe('7')
    expect(gql.body.errors[0]).toMatchObject({
      message: 'service unavailable',
      extensions: { code: 'service_unavailable' },
    })
  })

  it('when one call of a JSON-RPC batch meets an outage, then the batch is 200 with that call failing, and Retry-After is kept', async () => {
    const a = await createAccount(deps)
    const root = `${unique('out')}.test`
    await addZone(deps, root)
    const app = appWith({ provider: providerOut })
    const created = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'host', rootdomain: root })
      .expect(201)
    const id = created.body.subdomain.id as number

    const batch = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send([
        { jsonrpc: '2.0', method: 'quota.get', id: 1 },
        {
          jsonrpc: '2.0',
          method: 'dns_records.create',
          params: { subdomain_id: id, type: 'TXT', content: 'x' },
          id: 2,
        },
      ])
      .expect(200)
    expect(batch.headers['retry-after']).toBe('7')
    expect(batch.body[0].result.quota).toBeDefined()
    expect(batch.body[1].error).toMatchObject({
      code: -32016,
      data: { error_code: 'service_unavailable', http_status: 503 },
    })

    // A request whose only call meets the outage could not be served at all: 503.
    const single = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({
        jsonrpc: '2.0',
        method: 'dns_records.create',
        params: { subdomain_id: id, type: 'TXT', content: 'y' },
        id: 3,
      })
      .expect(503)
    expect(single.headers['retry-after']).toBe('7')
    expect(single.body.error.data.error_code).toBe('service_unavailable')

    // REST and GraphQL name the same code with the same header.
    const rest = await request(app)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'TXT', content: 'z' })
      .expect(503)
    expect(rest.headers['retry-after']).toBe('7')
    expect(rest.body.error.code).toBe('service_unavailable')
    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `mutation { createDnsRecord(subdomain_id: ${id}, type: "TXT", content: "w") { dns_record { id } } }`,
      })
      .expect(503)
    expect(gql.headers['retry-after']).toBe('7')
    expect(gql.body.errors[0].extensions.code).toBe('service_unavailable')
    expect(gql.body.data).toEqual({ createDnsRecord: null })
  })
})
