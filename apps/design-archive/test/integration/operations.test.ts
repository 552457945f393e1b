import { fixedClock } from '@quartet/core/clock'
import { requestOf } from '@quartet/core/operation/client'
import { request, silentLogger, useTestDeps } from '@quartet/core/testing'
import {
  expectDocumentedAnswer,
  expectDocumentedError,
  operationsWithoutRoute,
  routesWithoutOperation,
} from '@quartet/core/testing/operations'
import { createApp } from '../../src/app.ts'
import { BASE_PATH, DOCUMENT_NAMES } from '../../src/domain/documents.ts'
import { ReleaseCache } from '../../src/domain/release-cache.ts'
import { publishContent } from '../../src/domain/releases.ts'
import { designArchiveOperations, getDocument } from '../../src/http/operations.ts'
import { createDb } from '../../src/store/db.ts'
import { createReleaseRepository } from '../../src/store/release-repository.ts'
import { contentDir, migrationsDir, validator } from '../helpers.ts'

const deps = useTestDeps({ migrationsDir, prefix: 'design_ops', createDb })
const VERSION = 'ops-1.0.0'

// Express alone: without the fast path every document read goes through the operation's route.
const appWithout = (fastPath: boolean) => {
  const releases = new ReleaseCache(createReleaseRepository(deps.db, deps.database.schema))
  const app = createApp({
    config: { TRUST_PROXY: ['loopback'], DOCUMENT_ACCESS_LOG: !fastPath },
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
    releases,
  })
  return { app, releases }
}

beforeAll(async () => {
  await publishContent(
    {
      releases: createReleaseRepository(deps.db, deps.database.schema),
      validator,
      clock: fixedClock('2026-11-20T08:30:15Z'),
    },
    { dir: contentDir, version: VERSION, activate: true },
  )
})

describe('design-archive operations', () => {
  it('when the app is built, then every route is an operation (but the document path fallback) and every operation is served', () => {
    const { app } = appWithout(true)
    // The document path's preflight (OPTIONS) and 405 for other methods: CORS protocol and a
    // method refusal at the operation's path, not an operation of their own.
    const fallback = { method: 'all', path: `${BASE_PATH}/:document` }
    expect(routesWithoutOperation(app, designArchiveOperations, [fallback])).toEqual([])
    expect(operationsWithoutRoute(app, designArchiveOperations)).toEqual([])
  })

  it('when /openapi.json is read, then getDocument is documented with its output schema and its errors', async () => {
    const { app } = appWithout(true)
    const res = await request(app).get('/openapi.json').expect(200)
    const op = res.body.paths['/design-api/v1/{document}'].get
    expect(op.operationId).toBe('getDocument')
    expect(op.responses['200'].content['application/json'].schema).toMatchObject({ type: 'object' })
    expect(Object.keys(op.responses).sort()).toEqual(['200', '304', '400', '404', '405', '412', '503'])
  })

  it.each([
    ['express', false],
    ['the fast path', true],
  ])(
    'when every document is read through %s, then each answer parses with the documented schema',
    async (_name, fastPath) => {
      const { app, releases } = appWithout(fastPath)
      await releases.refresh()
      for (const document of DOCUMENT_NAMES) {
        const { url } = requestOf(getDocument, { params: { document }, query: {} })
        const res = await request(app).get(url).expect(200)
        expectDocumentedAnswer(getDocument, res)
        const pinned = await request(app).get(
          requestOf(getDocument, { params: { document }, query: { version: VERSION } }).url,
        )
        expectDocumentedAnswer(getDocument, pinned)
        const notModified = await request(app).get(url).set('If-None-Match', String(res.headers.etag))
        expect(notModified.status).toBe(304)
        expectDocumentedAnswer(getDocument, notModified)
      }
    },
  )

  it('when the document path refuses a request, then the status is one getDocument documents', async () => {
    const { app, releases } = appWithout(false)
    const empty = await request(app).get(`${BASE_PATH}/manifest.json`)
    expect(empty.status).toBe(503)
    expectDocumentedError(getDocument, empty)
    await releases.refresh()
    const manifest = await request(app).get(`${BASE_PATH}/manifest.json`).expect(200)
    const refusals = [
      request(app).get(`${BASE_PATH}/nothing.json`),
      request(app).get(`${BASE_PATH}/manifest.json?version=..`),
      request(app).get(`${BASE_PATH}/manifest.json?version=no-such-release`),
      request(app).post(`${BASE_PATH}/manifest.json`),
      request(app).get(`${BASE_PATH}/manifest.json`).set('If-Match', '"not-the-etag"'),
    ]
    const statuses: number[] = []
    for (const refusal of refusals) {
      const res = await refusal
      statuses.push(res.status)
      expectDocumentedError(getDocument, res)
    }
    expect(statuses).toEqual([404, 400, 404, 405, 412])
    expect(manifest.headers.etag).toBeDefined()
  })
})
