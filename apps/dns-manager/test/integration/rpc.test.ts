import { request } from '@quartet/core/testing'
import { dnsOperations as operations } from '../../src/http/operations.ts'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

describe('JSON-RPC 2.0 at /rpc', () => {
  it('when auth.verify is called, then the result is the seed account shape', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps, { quota: 4 })
    const res = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'auth.verify', id: 1 })
      .expect(200)
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { account: { api_key: a.apiKey, quota: { used: 0, total: 4, available: 4 } } },
    })
    await request(app)
      .post('/api/v1/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'quota.get', id: 'q' })
      .expect(200)
  })

  it('when the batch is [], then one -32600 error', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app).post('/rpc').set(a.headers).send([]).expect(200)
    expect(res.body).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32600,
        message: expect.any(String),
        data: { error_code: 'bad_request', http_status: 400 },
      },
    })
  })

  it('when the batch is [1,2,3], then three -32600 errors', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const res = await request(app).post('/rpc').set(a.headers).send([1, 2, 3]).expect(200)
    expect(res.body).toHaveLength(3)
    for (const r of res.body)
      expect(r).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message: expect.any(String),
          data: { error_code: 'bad_request', http_status: 400 },
        },
      })
  })

  it('when a batch mixes calls, notifications, unknown methods, bad params and domain errors, then each gets its answer', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const root = `${unique('rpc')}.test`
    await addZone(deps, root)
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
        { jsonrpc: '2.0', method: 'quota.get' },
        { jsonrpc: '2.0', method: 'no.such.method', id: 2 },
        { jsonrpc: '2.0', method: 'subdomains.get', params: { id: 'x' }, id: 3 },
        { jsonrpc: '2.0', method: 'subdomains.get', params: { id: 999999 }, id: 4 },
        { jsonrpc: '2.0', method: 'subdomains.list', params: [1], id: 5 },
        { jsonrpc: '1.0', method: 'quota.get', id: 6 },
        { jsonrpc: '2.0', method: 'subdomains.list', id: 7 },
      ])
      .expect(200)
    const byId = new Map((res.body as Array<{ id: unknown }>).map((r) => [r.id, r]))
    expect(res.body).toHaveLength(7) // the notification gets no answer
    expect(byId.get(1)).toMatchObject({ result: { subdomain: { full_domain: `batch.${root}` } } })
    expect(byId.get(2)).toMatchObject({
      error: { code: -32601, data: { error_code: 'not_found', http_status: 404 } },
    })
    expect(byId.get(3)).toMatchObject({
      error: { code: -32602, data: { error_code: 'bad_request', http_status: 400 } },
    })
    expect(byId.get(4)).toMatchObject({
      error: { code: -32005, data: { error_code: 'subdomain_not_found', http_status: 404 } },
    })
    expect(byId.get(5)).toMatchObject({ error: { code: -32602 } })
    expect(byId.get(6)).toMatchObject({ error: { code: -32600 } })
    expect(byId.get(7)).toMatchObject({ result: { subdomains: [{ subdomain: 'batch' }] } })
  })

  it('when a batch holds only notifications, then HTTP 204 with no body, and the calls still ran', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const root = `${unique('rpc')}.test`
    await addZone(deps, root)
    const res = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send([
        { jsonrpc: '2.0', method: 'subdomains.create', params: { subdomain: 'silent', rootdomain: root } },
        { jsonrpc: '2.0', method: 'quota.get' },
      ])
      .expect(204)
    expect(res.text).toBe('')
    const quota = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'quota.get', id: 1 })
    expect(quota.body.result.quota.used).toBe(1)
  })

  it('when the body is not JSON, then -32700; not an object, then -32600', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const parse = await request(app)
      .post('/rpc')
      .set(a.headers)
      .set('Content-Type', 'application/json')
      .send('{"jsonrpc":')
      .expect(200)
    expect(parse.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, data: { error_code: 'bad_request', http_status: 400 } },
    })
    const text = await request(app)
      .post('/rpc')
      .set(a.headers)
      .set('Content-Type', 'text/plain')
      .send('hello')
      .expect(200)
    expect(text.body.error).toMatchObject({ code: -32600, data: { error_code: 'bad_request' } })
  })

  it('when the body is over BODY_LIMIT or in a charset we do not read, then one JSON-RPC error object with the HTTP status, not the REST envelope', async () => {
    const { app } = buildApp(deps, { env: { BODY_LIMIT: '1kb' } })
    const a = await createAccount(deps)
    const big = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method: 'quota.get', params: { pad: 'x'.repeat(2000) }, id: 1 })
      .expect(413)
    expect(big.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, data: { error_code: 'payload_too_large', http_status: 413 } },
    })
    const latin = await request(app)
      .post('/rpc')
      .set(a.headers)
      .set('Content-Type', 'application/json; charset=latin1')
      .send('{}')
      .expect(415)
    expect(latin.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { data: { error_code: 'unsupported_media_type' } },
    })
  })

  it('when the batch is larger than 20, then one -32600 and nothing runs', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const calls = Array.from({ length: 21 }, (_, i) => ({ jsonrpc: '2.0', method: 'quota.get', id: i }))
    const res = await request(app).post('/rpc').set(a.headers).send(calls).expect(200)
    expect(res.body.error).toMatchObject({ code: -32600, data: { details: { max_batch: 20, got: 21 } } })
  })

  it('when credentials are wrong, then the HTTP status is 200 and the error, under the call’s id, carries auth_invalid_credentials (its http_status 401)', async () => {
    const { app } = buildApp(deps)
    const res = await request(app)
      .post('/rpc')
      .send({ jsonrpc: '2.0', method: 'auth.verify', id: 1 })
      .expect(200)
    expect(res.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32001, data: { error_code: 'auth_invalid_credentials', http_status: 401 } },
    })
  })

  it('when a batch spends more than the rate limit, then the calls past 60 get rate_limit_exceeded with reset_at', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const batch = Array.from({ length: 20 }, (_, i) => ({ jsonrpc: '2.0', method: 'quota.get', id: i }))
    for (let i = 0; i < 3; i++) {
      const ok = await request(app).post('/rpc').set(a.headers).send(batch).expect(200)
      expect(ok.body.every((r: { result?: unknown }) => r.result)).toBe(true)
    }
    const over = await request(app).post('/rpc').set(a.headers).send(batch.slice(0, 2)).expect(200)
    for (const r of over.body)
      expect(r.error).toMatchObject({
        code: -32011,
        data: {
          error_code: 'rate_limit_exceeded',
          http_status: 429,
          details: { reset_at: expect.any(String) },
        },
      })
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1)
  })

  it('when a batch of reads (run side by side) crosses the rate limit, then the calls in front get results and those past it the error, in the batch’s order', async () => {
    const { app } = buildApp(deps, { env: { RATE_LIMIT_PER_MINUTE: '5' } })
    const a = await createAccount(deps)
    const methods = ['quota.get', 'subdomains.list', 'auth.verify', 'system.info', 'keys.list']
    const batch = Array.from({ length: 8 }, (_, i) => ({
      jsonrpc: '2.0',
      method: methods[i % 5],
      id: `c${i}`,
    }))
    const res = await request(app).post('/rpc').set(a.headers).send(batch).expect(200)
    expect(res.body.map((r: { id: string }) => r.id)).toEqual(batch.map((c) => c.id))
    expect(res.body.map((r: { result?: unknown }) => (r.result ? 'ok' : 'limited'))).toEqual([
      ...Array(5).fill('ok'),
      ...Array(3).fill('limited'),
    ])
    for (const r of res.body.slice(5))
      expect(r.error).toMatchObject({ code: -32011, data: { error_code: 'rate_limit_exceeded' } })
  })

  it('when every operation gets bad input, then each answers a 4xx error, never 5xx', async () => {
    // One batch of every operation: more of them than the default batch size.
    const { app } = buildApp(deps, { env: { RPC_MAX_BATCH: String(operations.length) } })
    const a = await createAccount(deps)
    const calls = operations.map((op, i) => ({
      jsonrpc: '2.0',
      method: op.name,
      params: { id: -1, subdomain_id: 'x', bogus: true },
      id: i,
    }))
    const res = await request(app).post('/rpc').set(a.headers).send(calls).expect(200)
    expect(res.body).toHaveLength(operations.length)
    for (const r of res.body) {
      expect(r.error.data.http_status).toBeGreaterThanOrEqual(400)
      expect(r.error.data.http_status).toBeLessThan(500)
    }
  })

  it('when every REST route gets bad input, then each answers a 4xx in the envelope, never 5xx', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    for (const op of operations) {
      const path = `${op.route.path.replace(/:([a-z_]+)/g, 'x')}`
      const req = request(app)[op.route.method](path).set(a.headers)
      const res =
        op.route.method === 'get' ? await req.query({ bogus: '1' }) : await req.send({ bogus: true })
      expect([op.name, res.status >= 400 && res.status < 500]).toEqual([op.name, true])
      expect(res.body).toMatchObject({ success: false, error: { code: expect.any(String) } })
    }
  })
})
