import { hotReadAnswers } from '@quartet/core/testing/operations'
import { designArchiveOperations } from '../../src/http/operations.ts'
import { createHash } from 'node:crypto'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { fixedClock } from '@quartet/core/clock'
import {
  captureLogger,
  metricsText,
  request,
  type RunningServer,
  silentLogger,
  startTestServer,
  useTestDeps,
} from '@quartet/core/testing'
import { createApp } from '../../src/app.ts'
import { DOCUMENT_NAMES } from '../../src/domain/documents.ts'
import { ReleaseCache } from '../../src/domain/release-cache.ts'
import { publishContent } from '../../src/domain/releases.ts'
import { createDb } from '../../src/store/db.ts'
import { createReleaseRepository } from '../../src/store/release-repository.ts'
import { contentDir, migrationsDir, rawRequest, validator } from '../helpers.ts'

const deps = useTestDeps({ migrationsDir, prefix: 'design_docs', createDb })
const PUBLISHED_AT = new Date('2026-11-20T08:30:15.250Z')
const VERSION = 'docs-1.0.0'
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex')

let app: ReturnType<typeof createApp>
let server: RunningServer
let releases: ReleaseCache

beforeAll(async () => {
  const repository = createReleaseRepository(deps.db, deps.database.schema)
  await publishContent(
    { releases: repository, validator, clock: fixedClock(PUBLISHED_AT) },
    { dir: contentDir, version: VERSION, activate: true },
  )
  releases = new ReleaseCache(repository)
  await releases.refresh()
  app = createApp({
    config: { TRUST_PROXY: ['loopback'], CACHE_CONTROL: 'public, max-age=60' },
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
    releases,
  })
  server = await startTestServer(app)
})
afterAll(() => server?.close())

const path = (name: string) => `/design-api/v1/${name}`

describe('GET /design-api/v1/<document>', () => {
  it.each(DOCUMENT_NAMES)(
    'when %s is requested, then it is served as a JSON object whose sha256 is its ETag',
    async (name) => {
      const res = await rawRequest(server.url, 'GET', path(name))
      expect(res.status).toBe(200)
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
      expect(res.headers['etag']).toBe(`"${sha256(res.body)}"`)
      expect(Number(res.headers['content-length'])).toBe(res.body.length)
      const parsed: unknown = JSON.parse(res.body.toString('utf8'))
      // An object: expect.any(Object) also accepts null, and arrays are objects too.
      expect(Object.prototype.toString.call(parsed)).toBe('[object Object]')
    },
  )

  it('when the manifest is read, then it lists every other document with the sha256, bytes and items actually served', async () => {
    const manifest = (await request(app).get(path('manifest.json')).expect(200)).body as {
      service: string
      version: string
      published_at: string
      documents: Array<{
        name: string
        path: string
        sha256: string
        bytes: number
        items: number
        schema_version: string
      }>
    }
    expect(manifest).toMatchObject({
      service: 'design-archive',
      version: VERSION,
      published_at: PUBLISHED_AT.toISOString(),
    })
    expect(manifest.documents.map((d) => d.name)).toEqual(DOCUMENT_NAMES.filter((n) => n !== 'manifest.json'))
    for (const entry of manifest.documents) {
      const res = await rawRequest(server.url, 'GET', entry.path)
      expect({ sha256: sha256(res.body), bytes: res.body.length }).toEqual({
        sha256: entry.sha256,
        bytes: entry.bytes,
      })
      expect(entry.schema_version).toBe('1.0.0')
    }
    const terms = manifest.documents.find((d) => d.name === 'terms.json')!
    expect(terms.items).toBeGreaterThanOrEqual(270)
    const skill = (await request(app).get(path('skill-manifest.json'))).body as { version: string }
    expect(skill.version).toBe(VERSION)
  })

  it('when the catalog is read, then it indexes every style, block, gate, term, synonym and learning path', async () => {
    const catalog = (await request(app).get(path('catalog.json'))).body as {
      items: Array<{ id: string; kind: string; document: string }>
    }
    const count = async (name: string, key: string) =>
      ((await request(app).get(path(name))).body[key] as unknown[]).length
    const byKind = (kind: string) => catalog.items.filter((i) => i.kind === kind).length
    expect(byKind('style')).toBe(await count('styles.json', 'styles'))
    expect(byKind('block')).toBe(await count('blocks.json', 'blocks'))
    expect(byKind('quality-gate')).toBe(await count('quality-gates.json', 'gates'))
    expect(byKind('term')).toBe(await count('terms.json', 'terms'))
    expect(byKind('synonym')).toBe(await count('term-mappings.json', 'synonyms'))
    expect(byKind('learning-path')).toBe(await count('learning-paths.json', 'paths'))
  })

  it('when served, then cache, CORS and sniffing headers are set', async () => {
    const res = await request(app).get(path('styles.json')).set('Origin', 'https://example.org').expect(200)
    expect(res.headers['cache-control']).toBe('public, max-age=60')
    expect(res.headers['vary']).toBe('Accept-Encoding')
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['access-control-expose-headers']).toContain('ETag')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'")
    expect(res.headers['x-frame-options']).toBe('DENY')
    expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin')
    expect(res.headers['cross-origin-opener-policy']).toBeUndefined()
    expect(res.headers['x-xss-protection']).toBeUndefined()
    expect(res.headers['last-modified']).toBe('Fri, 20 Nov 2026 08:30:15 GMT')
    expect(res.headers['x-request-id']).toEqual(expect.any(String))
  })
})

describe('conditional requests', () => {
  const etagOf = async (name: string) => (await request(app).get(path(name))).headers['etag'] as string

  it('when If-None-Match carries the current ETag, then 304 without a body but with the validators', async () => {
    const etag = await etagOf('terms.json')
    const res = await rawRequest(server.url, 'GET', path('terms.json'), { 'If-None-Match': etag })
    expect(res.status).toBe(304)
    expect(res.body.length).toBe(0)
    expect(res.headers['etag']).toBe(etag)
    expect(res.headers['cache-control']).toBe('public, max-age=60')
    expect(res.headers['vary']).toBe('Accept-Encoding')
    // RFC 9110 §15.4.5: with an ETag, no other representation metadata; the cache keeps its own.
    expect(res.headers['last-modified']).toBeUndefined()
    expect(res.headers['content-type']).toBeUndefined()
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['access-control-expose-headers']).toBe('ETag, X-Request-Id')
    expect(res.headers['x-request-id']).toEqual(expect.any(String))
    // The security headers govern a body, and a 304 has none: the stored 200 keeps its own.
    const security = ['content-security-policy', 'x-content-type-options', 'x-frame-options']
    for (const name of [...security, 'referrer-policy', 'strict-transport-security'])
      expect(res.headers[name]).toBeUndefined()
  })

  it('when If-None-Match is weak, a list or *, then it still matches (weak comparison)', async () => {
    const etag = await etagOf('blocks.json')
    for (const header of [`W/${etag}`, `"nope", ${etag}`, '*']) {
      await request(app).get(path('blocks.json')).set('If-None-Match', header).expect(304)
    }
  })

  it('when If-None-Match is another ETag, then 200 even if If-Modified-Since alone would say 304', async () => {
    await request(app)
      .get(path('blocks.json'))
      .set('If-None-Match', `"${'0'.repeat(64)}"`)
      .set('If-Modified-Since', 'Sat, 21 Nov 2026 00:00:00 GMT')
      .expect(200)
  })

  describe('preconditions that can fail (RFC 9110 §13.1.1, §13.1.4), as nginx answers them', () => {
    const errorOf = (res: { body: unknown; text?: string }) => (res.body as { error: { code: string } }).error

    it('when If-Match names no current ETag, then 412 precondition_failed in the envelope, with the CORS headers', async () => {
      const etag = await etagOf('terms.json')
      for (const header of ['"nope"', `W/${etag}`, `"nope", W/${etag}`]) {
        const res = await request(app).get(path('terms.json')).set('If-Match', header)
        expect(res.status).toBe(412)
        expect(res.body).toEqual({
          error: { code: 'precondition_failed', message: expect.any(String), request_id: expect.any(String) },
        })
        expect(res.headers['access-control-allow-origin']).toBe('*')
        expect(res.headers['access-control-expose-headers']).toBe('ETag, X-Request-Id')
      }
      // HEAD: the same status, no body.
      const head = await rawRequest(server.url, 'HEAD', path('terms.json'), { 'If-Match': '"nope"' })
      expect(head.status).toBe(412)
      expect(head.body.length).toBe(0)
    })

    it('when If-Match is *, the current strong ETag, or a list holding it, then the document as usual', async () => {
      const etag = await etagOf('terms.json')
      for (const header of ['*', etag, `"nope", ${etag}`]) {
        const res = await rawRequest(server.url, 'GET', path('terms.json'), { 'If-Match': header })
        expect(res.status).toBe(200)
        expect(res.headers['etag']).toBe(etag)
        expect(res.body.length).toBeGreaterThan(0)
      }
    })

    it('when If-Unmodified-Since is before publication, then 412; at or after it, or not a date, then 200', async () => {
      const res = await request(app)
        .get(path('styles.json'))
        .set('If-Unmodified-Since', 'Fri, 20 Nov 2026 08:30:14 GMT')
      expect(res.status).toBe(412)
      expect(errorOf(res).code).toBe('precondition_failed')
      for (const date of ['Fri, 20 Nov 2026 08:30:15 GMT', 'Sat, 21 Nov 2026 00:00:00 GMT', 'not a date'])
        await request(app).get(path('styles.json')).set('If-Unmodified-Since', date).expect(200)
    })

    it('when a release is named with ?version=, then the same rules hold', async () => {
      await request(app)
        .get(`${path('blocks.json')}?version=${VERSION}`)
        .set('If-Match', '"nope"')
        .expect(412)
      await request(app)
        .get(`${path('blocks.json')}?version=${VERSION}`)
        .set('If-Match', '*')
        .expect(200)
    })

    it.each([
      [
        'If-Match holds, so If-Unmodified-Since is not evaluated',
        { 'If-Match': '*', 'If-Unmodified-Since': 'Fri, 20 Nov 2026 08:30:14 GMT' },
        200,
      ],
      [
        'If-Match fails before If-None-Match is looked at',
        { 'If-Match': '"nope"', 'If-None-Match': '*' },
        412,
      ],
      [
        'If-Unmodified-Since fails before If-Modified-Since is looked at',
        {
          'If-Unmodified-Since': 'Fri, 20 Nov 2026 08:30:14 GMT',
          'If-Modified-Since': 'Sat, 21 Nov 2026 00:00:00 GMT',
        },
        412,
      ],
      ['If-Match holds, then If-None-Match matches', { 'If-Match': '*', 'If-None-Match': '*' }, 304],
      [
        'If-Unmodified-Since holds, then If-Modified-Since says unchanged',
        {
          'If-Unmodified-Since': 'Sat, 21 Nov 2026 00:00:00 GMT',
          'If-Modified-Since': 'Sat, 21 Nov 2026 00:00:00 GMT',
        },
        304,
      ],
      [
        'If-None-Match is present, so If-Modified-Since is not evaluated',
        { 'If-Match': '*', 'If-None-Match': '"other"', 'If-Modified-Since': 'Sat, 21 Nov 2026 00:00:00 GMT' },
        200,
      ],
    ])('precedence (§13.2.2): when %s, then %d', async (_name, headers, status) => {
      const res = await rawRequest(server.url, 'GET', path('catalog.json'), headers)
      expect(res.status).toBe(status)
    })
  })

  it('when If-Modified-Since is at or after publication, then 304; before it, then 200', async () => {
    await request(app)
      .get(path('styles.json'))
      .set('If-Modified-Since', 'Fri, 20 Nov 2026 08:30:15 GMT')
      .expect(304)
    await request(app)
      .get(path('styles.json'))
      .set('If-Modified-Since', 'Fri, 20 Nov 2026 08:30:14 GMT')
      .expect(200)
    await request(app).get(path('styles.json')).set('If-Modified-Since', 'not a date').expect(200)
  })
})

describe('encoding negotiation', () => {
  const get = (acceptEncoding: string) =>
    rawRequest(
      server.url,
      'GET',
      path('terms.json'),
      acceptEncoding ? { 'Accept-Encoding': acceptEncoding } : {},
    )

  it.each([
    ['gzip, deflate, br', 'br'],
    ['br', 'br'],
    ['gzip', 'gzip'],
    ['br;q=0, gzip', 'gzip'],
    ['gzip;q=1, br;q=0.5', 'gzip'],
    ['*', 'br'],
    ['identity', undefined],
    ['', undefined],
  ])(
    'when Accept-Encoding is %j, then the coding is %s and the bytes decompress to the ETag',
    async (header, coding) => {
      const res = await get(header)
      expect(res.status).toBe(200)
      expect(res.headers['content-encoding']).toBe(coding)
      expect(res.headers['vary']).toBe('Accept-Encoding')
      expect(Number(res.headers['content-length'])).toBe(res.body.length)
      const raw =
        coding === 'br' ? brotliDecompressSync(res.body) : coding === 'gzip' ? gunzipSync(res.body) : res.body
      expect(`"${sha256(raw)}"`).toBe(res.headers['etag'])
      if (coding) expect(res.body.length).toBeLessThan(raw.length / 3)
    },
  )

  it('when HEAD is sent, then the headers match GET and there is no body', async () => {
    const get = await rawRequest(server.url, 'GET', path('blocks.json'), { 'Accept-Encoding': 'gzip' })
    const head = await rawRequest(server.url, 'HEAD', path('blocks.json'), { 'Accept-Encoding': 'gzip' })
    expect(head.status).toBe(200)
    expect(head.body.length).toBe(0)
    for (const h of [
      'etag',
      'content-length',
      'content-encoding',
      'content-type',
      'last-modified',
      'cache-control',
    ])
      expect([h, head.headers[h]]).toEqual([h, get.headers[h]])
  })
})

describe('CORS preflight, methods and unknown documents', () => {
  it('when a preflight arrives, then 204 allows GET/HEAD and the conditional headers', async () => {
    const res = await request(app)
      .options(path('terms.json'))
      .set('Origin', 'https://example.org')
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'if-none-match')
      .expect(204)
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(res.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS')
    expect(res.headers['access-control-allow-headers']).toMatch(/If-None-Match/)
    expect(res.headers['access-control-max-age']).toBe('86400')
  })

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])(
    'when %s is sent to a document, then 405 with Allow',
    async (method) => {
      const res = await rawRequest(server.url, method, path('manifest.json'))
      expect(res.status).toBe(405)
      expect(res.headers['allow']).toBe('GET, HEAD, OPTIONS')
      // The 200's CORS headers: a page on another origin reads the 405, not a CORS failure.
      expect(res.headers['access-control-allow-origin']).toBe('*')
      expect(res.headers['access-control-expose-headers']).toBe('ETag, X-Request-Id')
      expect(JSON.parse(res.body.toString())).toEqual({
        error: {
          code: 'method_not_allowed',
          message: expect.stringContaining(method),
          request_id: expect.any(String),
        },
      })
    },
  )

  it.each([
    ['malformed JSON', '{"a":'],
    ['JSON nested 10,000 deep', '['.repeat(10_000) + ']'.repeat(10_000)],
    ['a body past the 1 MB every other service reads', 'x'.repeat(2 * 1024 * 1024)],
  ])(
    'when a POST to a document carries %s, then 405 with Allow: the method is refused, the body never read',
    async (_label, body) => {
      const res = await fetch(`${server.url}${path('manifest.json')}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS')
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('method_not_allowed')
    },
  )

  it.each([
    '/design-api/v1/nope.json',
    '/design-api/v1/manifest',
    '/design-api/v1/manifest.json/',
    '/design-api/v1/Manifest.json',
    '/design-api/v1/MANIFEST.JSON',
    '/DESIGN-API/v1/manifest.json',
    '/design-api/v1/manifest%2Ejson',
    '/design-api/v1/%6danifest.json',
    '/design-api/v1/..%2fv1%2fmanifest.json',
    '/design-api/v1/%2e%2e/v1/manifest.json',
    '/design-api/v1/%252e%252e%252fmanifest.json',
    '/design-api/v1/..%5cmanifest.json',
    '/design-api/v1/..\\manifest.json',
    '/design-api/v1/../v1/manifest.json',
    '/design-api/v1/./manifest.json',
    '/design-api/v1//manifest.json',
    '/design-api/v1/manifest.json;.css',
    '/design-api/v1/',
    '/design-api/v1',
    '/design-api/v2/manifest.json',
    '/design-api/v1/schemas/terms.schema.json',
  ])('when %s is requested, then 404 not_found in the envelope', async (rawPath) => {
    const res = await rawRequest(server.url, 'GET', rawPath)
    expect(res.status).toBe(404)
    const body = JSON.parse(res.body.toString()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('not_found')
    expect(res.headers['access-control-allow-origin']).toBe('*')
    expect(body.error.message).toEqual(expect.any(String))
  })

  it.each(['/design-api/v1/manifest.json%00', '/design-api/v1/%E0%A4%A', '/design-api/v1/%FF.json'])(
    'when %s (an encoded NUL, broken or non-UTF-8 escapes) is requested, then 400 bad_request in the envelope',
    async (rawPath) => {
      const res = await rawRequest(server.url, 'GET', rawPath)
      expect(res.status).toBe(400)
      expect(res.headers['access-control-allow-origin']).toBe('*')
      const body = JSON.parse(res.body.toString()) as { error: { code: string; message: string } }
      expect(body.error.code).toBe('bad_request')
      expect(body.error.message).toMatch(/^path: /)
    },
  )

  it('when an unknown document gets another method, then it is still 404', async () => {
    expect((await rawRequest(server.url, 'DELETE', '/design-api/v1/nope.json')).status).toBe(404)
  })
})

describe('?version=', () => {
  it('when a published version is named, then that release is served as immutable', async () => {
    const res = await request(app)
      .get(`${path('manifest.json')}?version=${VERSION}`)
      .expect(200)
    expect(res.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(res.body.version).toBe(VERSION)
  })

  it('when an unknown version is named, then 404 release_not_found', async () => {
    const res = await request(app)
      .get(`${path('manifest.json')}?version=9.9.9`)
      .expect(404)
    expect(res.body.error.code).toBe('release_not_found')
  })

  it('when the version is malformed, then 400 bad_request naming the parameter', async () => {
    const res = await request(app)
      .get(`${path('manifest.json')}?version=..%2F..`)
      .expect(400)
    expect(res.body.error).toMatchObject({
      code: 'bad_request',
      message: expect.stringContaining('query.version'),
    })
  })
})

describe('OpenAPI and an empty cache', () => {
  it('when /openapi.json is read, then it documents the document operation', async () => {
    const res = await request(app).get('/openapi.json').expect(200)
    expect(res.body.openapi).toBe('3.1.0')
    expect(res.body.paths['/design-api/v1/{document}'].get.operationId).toBe('getDocument')
  })

  it('when no release has been loaded yet, then documents answer 503 and readiness fails', async () => {
    const empty = createApp({
      config: { TRUST_PROXY: ['loopback'] },
      logger: silentLogger(),
      db: deps.db,
      kv: deps.kv,
      releases: new ReleaseCache({
        activeVersion: async () => null,
        load: async () => null,
        storeCompressed: async () => {},
      }),
    })
    const res = await request(empty).get(path('manifest.json')).expect(503)
    expect(res.body.error.code).toBe('service_unavailable')
    const ready = await request(empty).get('/readyz').expect(503)
    expect(ready.body.failing).toEqual(['release'])
  })
})

describe('the fast path', () => {
  const appWith = (accessLog: boolean, logger = silentLogger()) =>
    createApp({
      config: {
        TRUST_PROXY: ['loopback'],
        CACHE_CONTROL: 'public, max-age=60',
        DOCUMENT_ACCESS_LOG: accessLog,
      },
      logger,
      db: deps.db,
      kv: deps.kv,
      releases,
    })
  const comparable = (headers: Record<string, unknown>) => {
    const { date: _date, 'x-request-id': _id, 'keep-alive': _ka, connection: _c, ...rest } = headers
    return rest
  }

  // On a kept-alive connection the fast path sends its prebuilt heads; on a closing one node
  // builds the head from the same lines (core's sendPrebuilt).
  it.each(
    (
      [
        ['GET', { 'Accept-Encoding': 'br' }],
        ['GET', {}],
        ['HEAD', {}],
        ['GET', { 'If-None-Match': '*' }],
        ['OPTIONS', { Origin: 'https://example.org', 'Access-Control-Request-Method': 'GET' }],
      ] as const
    ).flatMap(([method, headers]) =>
      ['keep-alive', 'close'].map((connection) => [method, { ...headers, Connection: connection }] as const),
    ),
  )(
    'when %s %j is answered by the fast path, then status, headers and body equal the express pipeline',
    async (method, headers) => {
      const fast = await startTestServer(appWith(false))
      const slow = await startTestServer(appWith(true))
      try {
        const [a, b] = await Promise.all(
          [fast, slow].map((s) =>
            rawRequest(s.url, method, path('learning-paths.json'), {
              ...headers,
              'X-Request-Id': 'same-id-1',
            }),
          ),
        )
        expect(a!.status).toBe(b!.status)
        expect(comparable(a!.headers)).toEqual(comparable(b!.headers))
        expect(a!.headers['x-request-id']).toBe('same-id-1')
        expect(a!.body.equals(b!.body)).toBe(true)
      } finally {
        await Promise.all([fast.close(), slow.close()])
      }
    },
  )

  it('when the hot read is asked before express and of express alone (core hotReadAnswers), then the answers agree', async () => {
    const doc = path('learning-paths.json')
    const preflight = { Origin: 'https://example.org', 'Access-Control-Request-Method': 'GET' }
    const { hot, express } = await hotReadAnswers(appWith(false), designArchiveOperations, [
      { operation: 'getDocument', path: doc },
      { operation: 'getDocument', path: doc, headers: { 'Accept-Encoding': 'br' } },
      { operation: 'getDocument', path: path('terms.json'), headers: { 'Accept-Encoding': 'gzip' } },
      { operation: 'getDocument', path: doc, method: 'HEAD' },
      { operation: 'getDocument', path: doc, headers: { 'If-None-Match': '*' } },
      { operation: 'getDocument', path: doc, method: 'OPTIONS', headers: preflight },
    ])
    expect(hot.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 304, 204])
    expect(hot).toEqual(express)
  })

  it('when documents are served fast, then metrics count them under the route template and no access line is logged', async () => {
    const captured = captureLogger()
    const fastApp = appWith(false, captured.logger)
    await request(fastApp).get(path('terms.json')).expect(200)
    await request(fastApp).get(path('terms.json')).set('If-None-Match', '*').expect(304)
    const metrics = await metricsText(fastApp)
    expect(metrics).toMatch(
      /http_requests_total\{method="GET",route="\/design-api\/v1\/:document",status="200",service="design-archive"\} 1/,
    )
    expect(metrics).toMatch(
      /http_requests_total\{method="GET",route="\/design-api\/v1\/:document",status="304",service="design-archive"\} 1/,
    )
    expect(captured.lines.filter((l) => JSON.stringify(l).includes('/design-api/v1/terms.json'))).toEqual([])

    const logged = captureLogger()
    await request(appWith(true, logged.logger))
      .get(path('terms.json'))
      .set('X-Request-Id', 'logged-1')
      .expect(200)
    expect(logged.lines.some((l) => l.req_id === 'logged-1')).toBe(true)
  })
})
