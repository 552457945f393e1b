import type supertest from 'supertest'
import { request, silentLogger } from '@quartet/core/testing'
import type { AnyOperation, InputOf } from '@quartet/core/operation'
import { requestOf } from '@quartet/core/operation/client'
import {
  expectDocumentedAnswer,
  expectDocumentedError,
  operationsWithoutRoute,
  routesWithoutOperation,
} from '@quartet/core/testing/operations'
import { buildPickupShare } from '../../src/app.ts'
import * as adminOps from '../../src/http/admin.ts'
import * as downloads from '../../src/http/download.ts'
import { DOWNLOAD_PATHS } from '../../src/http/download.ts'
import { pickupShareOperations } from '../../src/http/operations.ts'
import { checkAuthCodeOperation, createShareOperation, takeOperation } from '../../src/http/share.ts'
import * as stores from '../../src/http/stores.ts'
import { TUS_BASE_PATH } from '../../src/http/tus.ts'
import { blobUploadOperation, repoUploadOperation, requestUploadOperation } from '../../src/http/upload.ts'
import { generateClientTokenOperation, vercelBlobPutOperation } from '../../src/http/vercel-blob.ts'
import { siteInfoOperation } from '../../src/http/web.ts'
import {
  ADMIN_HEADERS,
  ADMIN_PASSWORD,
  type Harness,
  startHarness,
  testConfig,
  testDeps,
} from '../support/harness.ts'

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

/**
 * The routes the app serves that are not API operations, and why: the tus 1.0 protocol (its own
 * headers and answers, written by @tus/server; tus.ts) and the 405 of every other method on a
 * download path.
 */
const NOT_OPERATIONS = [
  // app.all with a list of paths: the walker names them joined.
  { method: 'all', path: `${TUS_BASE_PATH}/:instance,${TUS_BASE_PATH}/:instance/:id` },
  { method: 'all', path: DOWNLOAD_PATHS.join(',') },
]

/** A body read as text whatever its type (supertest leaves a file's bytes in a Buffer). */
const asText = (res: supertest.Response) =>
  res.body instanceof Buffer ? res.body.toString('utf8') : (res.text ?? res.body)

describe('pickup-share operations', () => {
  it('when the app is built, then every API route it serves is an operation and every operation is served', () => {
    const built = buildPickupShare({
      config: testConfig(),
      logger: silentLogger(),
      db: deps.db,
      kv: deps.kv,
    }).app
    // The pages and their assets (web.ts) are not API routes.
    const api = routesWithoutOperation(built, pickupShareOperations, NOT_OPERATIONS).filter((r) =>
      r.path.startsWith('/api/'),
    )
    expect(api).toEqual([])
    expect(operationsWithoutRoute(built, pickupShareOperations)).toEqual([])
  })

  it('when /openapi.json is read, then each operation is there with an output schema for each success status with a body', async () => {
    const res = await request(h.url).get('/openapi.json').expect(200)
    for (const op of pickupShareOperations) {
      const documented = res.body.paths[op.route.path.replace(/:(\w+)/g, '{$1}')][op.route.method]
      // POST /api/upload is two operations, documented as one (operations.ts uploadRequestDoc).
      expect(documented.operationId).toBe(op === generateClientTokenOperation ? 'requestUpload' : op.name)
      for (const [status, response] of Object.entries(op.responses as Record<string, { schema?: unknown }>))
        if (response.schema)
          expect(Object.values(documented.responses[status].content)[0]).toHaveProperty('schema')
    }
  })

  it('when each operation is called as the pages and clients call it, then its answer parses with its documented output schema', async () => {
    const called = new Set<string>()
    const call = async <O extends AnyOperation>(
      op: O,
      input: InputOf<O>,
      headers: Record<string, string> = {},
      raw?: Buffer,
    ) => {
      const { method, url, body } = requestOf(op, input)
      const verb = method.toLowerCase() as 'get' | 'head' | 'post' | 'put' | 'delete'
      const req = request(h.url)[verb](url).set(headers)
      const res = await (raw
        ? req.set('content-type', 'application/octet-stream').send(raw)
        : req.send(body as object))
      called.add(op.name)
      return expectDocumentedAnswer(op, {
        status: res.status,
        body: verb === 'head' ? undefined : op.responses[res.status]?.contentType ? asText(res) : res.body,
      }) as never
    }
    const login = await request(h.url)
      .post('/api/admin/login')
      .set(ADMIN_HEADERS(h))
      .send({ password: ADMIN_PASSWORD })
    expectDocumentedAnswer(adminOps.adminLoginOperation, login)
    called.add(adminOps.adminLoginOperation.name)
    const admin = { ...ADMIN_HEADERS(h), cookie: String(login.headers['set-cookie']![0]).split(';')[0]! }

    await call(siteInfoOperation, {}, {})
    await call(adminOps.getSettingsOperation, {}, admin)
    await call(
      adminOps.putSettingsOperation,
      { body: { unlimitedEnabled: true, previewEnabled: true } },
      admin,
    )

    const data = Buffer.from('hello from the operations test\n')
    const grant: {
      pathname: string
      proof: string
      upload: { url: string; headers: Record<string, string> }
    } = await call(requestUploadOperation, {
      body: { store: 'blob', name: 'note.txt', size: data.length, type: 'text/plain' },
    })
    const upload = await request(h.url)
      .put(grant.upload.url)
      .set(grant.upload.headers)
      .set('content-type', 'application/octet-stream')
      .send(data)
    expectDocumentedAnswer(blobUploadOperation, upload)
    called.add(blobUploadOperation.name)

    const token: { clientToken: string } = await call(generateClientTokenOperation, {
      body: { type: 'blob.generate-client-token', payload: { pathname: 'vercel.txt' } },
    })
    const put = await request(h.url)
      .put('/api/blob/vercel/?pathname=vercel.txt')
      .set('authorization', `Bearer ${token.clientToken}`)
      .set('content-type', 'application/octet-stream')
      .send(data)
    expectDocumentedAnswer(vercelBlobPutOperation, put)
    called.add(vercelBlobPutOperation.name)

    const code: { id: string; code: string } = await call(
      adminOps.createAuthCodeOperation,
      { body: { scope: 'both', expiresInHours: 1, note: 'ops' } },
      admin,
    )
    await call(checkAuthCodeOperation, { body: { authCode: code.code, unlimitedDownloads: true } })
    await call(adminOps.listAuthCodesOperation, {}, admin)
    await call(adminOps.revokeAuthCodeOperation, { body: { id: code.id } }, admin)

    const file = {
      name: 'note.txt',
      size: data.length,
      type: 'text/plain',
      pathname: grant.pathname,
      store: 'blob' as const,
      proof: grant.proof,
    }
    const shared: { code: string } = await call(createShareOperation, {
      body: { files: [file], maxDownloads: 10 },
    })
    await call(takeOperation, { body: { code: shared.code } })
    const at = { query: { code: shared.code, path: grant.pathname } }
    await call(downloads.downloadHeadOperation, at)
    await call(downloads.downloadOperation, at)
    await call(downloads.previewHeadOperation, at)
    await call(downloads.previewOperation, at)
    await call(downloads.downloadAllHeadOperation, { query: { code: shared.code } })
    await call(downloads.downloadAllOperation, { query: { code: shared.code } })

    await call(adminOps.listSharesOperation, { query: { pageSize: 10 } }, admin)
    await call(adminOps.deleteShareOperation, { body: { code: shared.code } }, admin)
    await call(adminOps.cleanupOrphansOperation, { body: { action: 'cleanup' } }, admin)
    await call(adminOps.auditLogOperation, { query: { limit: 10 } }, admin)

    await call(stores.listStoresOperation, {}, admin)
    await call(
      stores.upsertStoreOperation,
      { body: { name: 'ops-blob', kind: 'blob', quotaBytes: 1_000_000 } },
      admin,
    )
    await call(stores.upsertStoreOperation, { body: { name: 'ops-blob', quotaBytes: 2_000_000 } }, admin)
    await call(stores.testStoreOperation, { body: { name: 'ops-blob' } }, admin)
    await call(stores.deleteStoreOperation, { body: { name: 'ops-blob' } }, admin)
    await call(adminOps.adminLogoutOperation, {}, admin)

    // The repository store needs a git remote: its uploads are in repo-store.test.ts; here its refusal.
    const notCalled = pickupShareOperations.map((op) => op.name).filter((name) => !called.has(name))
    expect(notCalled).toEqual([repoUploadOperation.name])
  })

  it('when an operation refuses a request, then the status is one its definition documents', async () => {
    const app = request(h.url)
    const refusals: Array<[AnyOperation, () => supertest.Test]> = [
      [requestUploadOperation, () => app.post('/api/upload').send({ store: 'blob', name: '', size: -1 })],
      [
        generateClientTokenOperation,
        () => app.post('/api/upload').send({ type: 'blob.generate-client-token' }),
      ],
      [
        blobUploadOperation,
        () => app.put('/api/blob/upload').set('content-type', 'application/octet-stream').send('x'),
      ],
      [blobUploadOperation, () => app.put('/api/blob/upload').send({ json: true })],
      [
        repoUploadOperation,
        () => app.put('/api/repo/upload').set('content-type', 'application/octet-stream').send('x'),
      ],
      [createShareOperation, () => app.post('/api/share').send({ files: [] })],
      [
        checkAuthCodeOperation,
        () => app.post('/api/auth-code/check').send({ authCode: 'nope', limitSize: true }),
      ],
      [takeOperation, () => app.post('/api/take').send({ code: '000000000000' })],
      [downloads.downloadOperation, () => app.get('/api/download?code=000000000000&path=x')],
      [downloads.downloadOperation, () => app.get('/api/download?path=x')],
      [downloads.previewOperation, () => app.get('/api/preview?code=000000000000&path=x')],
      [downloads.downloadAllOperation, () => app.get('/api/download-all?code=000000000000')],
      [adminOps.adminLoginOperation, () => app.post('/api/admin/login').send({ password: 'x' })],
      [
        adminOps.adminLoginOperation,
        () => app.post('/api/admin/login').set(ADMIN_HEADERS(h)).send({ password: 'wrong' }),
      ],
      [adminOps.listSharesOperation, () => app.get('/api/admin/shares')],
      [adminOps.putSettingsOperation, () => app.put('/api/admin/settings').set(ADMIN_HEADERS(h)).send({})],
      [stores.listStoresOperation, () => app.get('/api/admin/stores')],
    ]
    for (const [op, send] of refusals) {
      const res = await send()
      expect(res.status).toBeGreaterThanOrEqual(400)
      expectDocumentedError(op, res)
    }
  })
})
