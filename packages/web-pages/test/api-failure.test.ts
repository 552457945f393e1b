import {
  ApiFailure,
  codeEnvelope,
  failureOf,
  restEnvelope,
  retryAfterOf,
  sendJson,
} from '../src/api-failure.ts'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), {
    status,
    statusText: status === 404 ? 'Not Found' : status === 429 ? 'Too Many Requests' : '',
    headers: { 'content-type': 'application/json', ...headers },
  })

describe('reading the error envelope', () => {
  it("when pickup-share's envelope comes, then its code, message, details and request id are the failure's", async () => {
    const res = json(404, {
      error: {
        code: 'share_not_found',
        message: 'no such share',
        details: { reason: 'x' },
        request_id: 'r1',
      },
    })
    const failure = await failureOf(res, codeEnvelope)
    expect(failure).toBeInstanceOf(ApiFailure)
    expect(failure).toBeInstanceOf(Error)
    expect([failure.status, failure.code, failure.message, failure.details, failure.requestId]).toEqual([
      404,
      'share_not_found',
      'no such share',
      { reason: 'x' },
      'r1',
    ])
  })

  it("when dns-manager's envelope comes, then the request id is read beside the error, not inside it", async () => {
    const body = {
      success: false,
      error: { code: 'bad_request', message: 'name: required', details: { field: 'name' } },
      request_id: 'r2',
    }
    const failure = await failureOf(json(400, body), restEnvelope)
    expect([failure.code, failure.message, failure.details.field, failure.requestId]).toEqual([
      'bad_request',
      'name: required',
      'name',
      'r2',
    ])
    // Read as pickup-share's shape, the same body has no request id where that shape keeps it.
    expect((await failureOf(json(400, body), codeEnvelope)).requestId).toBeNull()
  })

  it("when core's bad input answer names its issues, then they are the failure's details.issues", async () => {
    const issues = [{ field: 'body.maxExpireDays', message: 'must be at most 365' }]
    const failure = await failureOf(
      json(400, { error: { code: 'bad_request', message: 'm', details: { issues } } }),
      codeEnvelope,
    )
    expect(failure.details.issues).toEqual(issues)
  })

  it('when the body is not JSON, then the status is the code and the status text the message', async () => {
    const failure = await failureOf(
      new Response('<html>', { status: 502, statusText: 'Bad Gateway' }),
      codeEnvelope,
    )
    expect([failure.code, failure.message, failure.details]).toEqual(['502', 'Bad Gateway', {}])
    const bare = await failureOf(new Response('', { status: 503 }), restEnvelope)
    expect([bare.code, bare.message]).toEqual(['503', 'HTTP 503'])
  })

  it('when the JSON is not the envelope, then the status is the code and the status text the message', async () => {
    for (const body of [{}, { error: 'nope' }, [1, 2], { error: { code: { nested: 1 } } }]) {
      const failure = await failureOf(json(404, body), codeEnvelope)
      expect([failure.code, failure.message, failure.details, failure.requestId]).toEqual([
        '404',
        'Not Found',
        {},
        null,
      ])
    }
  })

  it('when the code is a number (key-info shape), then it is read as text', async () => {
    const failure = await failureOf(json(404, { error: { code: 404, message: 'Not Found' } }), codeEnvelope)
    expect(failure.code).toBe('404')
  })

  it('when Retry-After gives seconds, then the failure carries them; a date or nothing gives null', async () => {
    const failure = await failureOf(
      json(429, { error: { code: 'rate_limit_exceeded', message: 'slow down' } }, { 'retry-after': '42' }),
      codeEnvelope,
    )
    expect(failure.retryAfter).toBe(42)
    expect(retryAfterOf(new Headers({ 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' }))).toBeNull()
    expect(retryAfterOf(new Headers({ 'retry-after': '-1' }))).toBeNull()
    expect(retryAfterOf(new Headers())).toBeNull()
  })
})

describe('sending a request', () => {
  let server: http.Server
  let base: string
  const seen: Array<{ method?: string; headers: http.IncomingHttpHeaders; body: string }> = []
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        seen.push({ method: req.method, headers: req.headers, body })
        if (req.url === '/ok') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
        } else {
          res
            .writeHead(409, { 'content-type': 'application/json', 'retry-after': '3' })
            .end('{"success":false,"error":{"code":"conflict","message":"taken"},"request_id":"q"}')
        }
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  it('when a body is given, then it travels as JSON with its headers, and a 2xx answer is returned', async () => {
    const res = await sendJson('POST', `${base}/ok`, {
      body: { a: 1 },
      headers: { 'x-requested-with': 'test' },
      read: restEnvelope,
    })
    expect(await res.json()).toEqual({ ok: true })
    const last = seen.at(-1)!
    expect([last.method, last.body, last.headers['content-type'], last.headers['x-requested-with']]).toEqual([
      'POST',
      '{"a":1}',
      'application/json',
      'test',
    ])
  })

  it('when no body is given, then none is sent and no content type claimed', async () => {
    await sendJson('GET', `${base}/ok`, { read: codeEnvelope })
    expect(seen.at(-1)!.headers['content-type']).toBeUndefined()
  })

  it('when the answer is not 2xx, then it is thrown as the envelope read says', async () => {
    const err = await sendJson('POST', `${base}/fail`, { body: {}, read: restEnvelope }).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(ApiFailure)
    const failure = err as ApiFailure
    expect([failure.status, failure.code, failure.message, failure.retryAfter, failure.requestId]).toEqual([
      409,
      'conflict',
      'taken',
      3,
      'q',
    ])
  })

  it('when nothing answers, then the failure is network with status 0', async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const err = await sendJson('GET', `http://127.0.0.1:${port}/`, { read: codeEnvelope }).catch(
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(ApiFailure)
    expect([(err as ApiFailure).status, (err as ApiFailure).code]).toEqual([0, 'network'])
  })
})
