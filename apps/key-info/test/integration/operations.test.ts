import type supertest from 'supertest'
import { request } from '@quartet/core/testing'
import type { AnyOperation, InputOf } from '@quartet/core/operation'
import { requestOf } from '@quartet/core/operation/client'
import {
  expectDocumentedAnswer,
  expectDocumentedError,
  operationsWithoutRoute,
  routesWithoutOperation,
} from '@quartet/core/testing/operations'
import { getCurrentKey } from '../../src/http/key.ts'
import {
  createKeyOperation,
  deleteKeyOperation,
  getKeyOperation,
  listKeysOperation,
  updateKeyOperation,
} from '../../src/http/keys.ts'
import { keyInfoOperations } from '../../src/http/operations.ts'
import { recordUsageOperation } from '../../src/http/usage.ts'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

describe('key-info operations', () => {
  it('when the app is built, then every route it serves is an operation and every operation is served', () => {
    const app = buildApp(deps)
    expect(routesWithoutOperation(app, keyInfoOperations)).toEqual([])
    expect(operationsWithoutRoute(app, keyInfoOperations)).toEqual([])
  })

  it('when /openapi.json is read, then each operation is there with an output schema for each success status', async () => {
    const res = await request(buildApp(deps)).get('/openapi.json').expect(200)
    for (const op of keyInfoOperations) {
      const documented = res.body.paths[op.route.path.replace(/:(\w+)/g, '{$1}')][op.route.method]
      expect(documented.operationId).toBe(op.name)
      for (const status of Object.keys(op.responses))
        expect(documented.responses[status].content['application/json'].schema).toMatchObject({
          type: 'object',
        })
    }
  })

  it('when each operation is called as the integration tests call it, then its answer parses with its documented output schema', async () => {
    const app = buildApp(deps)
    const admin = await mintKey(deps, { isManagementKey: true })
    const called = new Set<string>()
    const call = async <O extends AnyOperation>(op: O, input: InputOf<O>, key = admin.key) => {
      const { method, url, body } = requestOf(op, input)
      const verb = method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete'
      const agent = request(app)
      const res = await agent[verb](url)
        .set(bearer(key))
        .send(body as object)
      called.add(op.name)
      return expectDocumentedAnswer(op, res) as never
    }

    // GET /api/v1/key twice: as the hot route answers it and, with a query string, as express does.
    await call(getCurrentKey, {})
    const viaExpress = await request(app).get('/api/v1/key?x=1').set(bearer(admin.key)).expect(200)
    expectDocumentedAnswer(getCurrentKey, viaExpress)

    const created: { data: { hash: string } } = await call(createKeyOperation, {
      body: { name: 'ops', limit: 12.5, limit_reset: 'monthly', external: { user: 'u-1' } },
    })
    await call(listKeysOperation, { query: { limit: '10', include_disabled: 'true' } })
    await call(getKeyOperation, { params: { hash: created.data.hash } })
    await call(updateKeyOperation, {
      params: { hash: created.data.hash },
      body: { disabled: true, limit: null },
    })
    await call(recordUsageOperation, {
      body: {
        events: [
          { id: 'ops-1', key_hash: created.data.hash, amount: 0.25 },
          { id: 'ops-1', key_hash: created.data.hash, amount: 0.25 },
          { id: 'ops-2', key_hash: 'f'.repeat(64), amount: 1 },
        ],
      },
    })
    await call(deleteKeyOperation, { params: { hash: created.data.hash } })

    expect([...called].sort()).toEqual(keyInfoOperations.map((op) => op.name).sort())
  })

  it('when an operation refuses a request, then the status is one its definition documents', async () => {
    const app = buildApp(deps)
    const admin = await mintKey(deps, { isManagementKey: true })
    const normal = await mintKey(deps)
    const missing = 'e'.repeat(64)
    const refusals: Array<[AnyOperation, () => supertest.Test]> = [
      [getCurrentKey, () => request(app).get('/api/v1/key')],
      [getCurrentKey, () => request(app).get('/api/v1/key').set(bearer('sk-qk-v1-unknown'))],
      [listKeysOperation, () => request(app).get('/api/v1/keys').set(bearer(normal.key))],
      [listKeysOperation, () => request(app).get('/api/v1/keys?limit=0').set(bearer(admin.key))],
      [
        listKeysOperation,
        () =>
          request(app)
            .get('/api/v1/keys?workspace_id=00000000-0000-4000-8000-000000000000')
            .set(bearer(admin.key)),
      ],
      [createKeyOperation, () => request(app).post('/api/v1/keys').set(bearer(admin.key)).send({ name: '' })],
      [getKeyOperation, () => request(app).get(`/api/v1/keys/${missing}`).set(bearer(admin.key))],
      [
        updateKeyOperation,
        () => request(app).patch(`/api/v1/keys/${missing}`).set(bearer(admin.key)).send({}),
      ],
      [deleteKeyOperation, () => request(app).delete(`/api/v1/keys/${missing}`).set(bearer(admin.key))],
      [
        recordUsageOperation,
        () => request(app).post('/api/v1/usage').set(bearer(admin.key)).send({ events: [] }),
      ],
    ]
    for (const [op, send] of refusals) {
      const res = await send()
      expect(res.status).toBeGreaterThanOrEqual(400)
      expectDocumentedError(op, res)
    }
  })
})
