import type supertest from 'supertest'
import { request } from '@quartet/core/testing'
import { buildApp, createAccount, useDeps } from '../helpers.ts'

const deps = useDeps()

describe('answers that may carry a secret are Cache-Control: no-store', () => {
  it('when a key is created or regenerated in REST, JSON-RPC or GraphQL, then the answer with the secret is no-store', async () => {
    const { app } = buildApp(deps, { env: { MAX_API_KEYS: '10' } })
    const a = await createAccount(deps)

    const rest = await request(app).post('/rest/keys').set(a.headers).expect(201)
    expect(rest.body.key.api_secret).toMatch(/^[0-9a-f]{64}$/)
    expect(rest.headers['cache-control']).toBe('no-store')
    const regenerated = await request(app)
      .post(`/api/v1/rest/keys/${rest.body.key.id}/regenerate`)
      .set(a.headers)
      .expect(200)
    expect(regenerated.body.key.api_secret).toMatch(/^[0-9a-f]{64}$/)
    expect(regenerated.headers['cache-control']).toBe('no-store')

    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'keys.create', id: 1 })
      .expect(200)
    expect(rpc.body.result.key.api_secret).toMatch(/^[0-9a-f]{64}$/)
    expect(rpc.headers['cache-control']).toBe('no-store')

    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({ query: 'mutation { createApiKey { key { api_secret } } }' })
      .expect(200)
    expect(gql.body.data.createApiKey.key.api_secret).toMatch(/^[0-9a-f]{64}$/)
    expect(gql.headers['cache-control']).toBe('no-store')
  })

  it.each([
    ['a REST read', (r: supertest.Agent) => r.get('/rest/quota')],
    ["a REST error of another account's zone file", (r: supertest.Agent) => r.get('/rest/subdomains/1/zone')],
    ['a refused REST call', (r: supertest.Agent) => r.get('/rest/quota').set('X-API-Secret', 'x')],
    [
      'a JSON-RPC call',
      (r: supertest.Agent) => r.post('/rpc').send({ jsonrpc: '2.0', method: 'quota.get', id: 1 }),
    ],
    [
      'a JSON-RPC parse error',
      (r: supertest.Agent) => r.post('/rpc').set('Content-Type', 'application/json').send('{'),
    ],
    [
      'a GraphQL query',
      (r: supertest.Agent) => r.post('/graphql').send({ query: '{ quota { balance_cents } }' }),
    ],
    ['a GraphQL GET', (r: supertest.Agent) => r.get('/api/v1/graphql?query=%7Bquota%7Bbalance_cents%7D%7D')],
    [
      'a refused GraphQL request',
      (r: supertest.Agent) => r.post('/graphql').set('Content-Type', 'text/plain').send('x'),
    ],
  ])(
    'when %s is answered, then it is no-store too (every answer of the three styles is)',
    async (_name, call) => {
      const { app } = buildApp(deps)
      const a = await createAccount(deps)
      const agent = request.agent(app).set(a.headers)
      const res = await call(agent)
      expect(res.headers['cache-control']).toBe('no-store')
    },
  )
})
