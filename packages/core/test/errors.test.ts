import { randomBytes } from 'node:crypto'
import express, { type Express } from 'express'
import { request } from '../src/testing.ts'
import {
  ApiError,
  coreErrorStatus,
  defineErrorCodes,
  type EnvelopeStyle,
  type ErrorCode,
  errorMiddleware,
  notFoundMiddleware,
  renderCodeEnvelope,
  renderEnvelope,
  renderGraphQLError,
  renderJsonRpcError,
  renderRestEnvelope,
  renderStatusEnvelope,
  statusOf,
  toApiError,
} from '../src/errors.ts'

/** Codes registered by a test are unique so the process-wide table never sees a clash between tests. */
function uniqueCode(base: string): string {
  return `${base}_${randomBytes(4).toString('hex')}`
}

describe('ApiError and the code→status table', () => {
  it('when an ApiError is built from a core code, then it carries the status from the table', () => {
    const err = new ApiError('rate_limit_exceeded', 'slow down', { reset_at: '2030-01-01T00:00:00.000Z' })

    expect(err.status).toBe(429)
    expect(err.code).toBe('rate_limit_exceeded')
    expect(err.details).toEqual({ reset_at: '2030-01-01T00:00:00.000Z' })
    expect(err).toBeInstanceOf(Error)
  })

  it('when every core code is looked up, then its status is a 4xx or 5xx', () => {
    for (const [code, status] of Object.entries(coreErrorStatus)) {
      expect(statusOf(code as ErrorCode)).toBe(status)
      expect(status >= 400 && status <= 599).toBe(true)
    }
  })

  it('when an unknown thing is thrown, then toApiError makes it a 500 internal_error keeping the cause', () => {
    const cause = new Error('connect ECONNREFUSED 10.0.0.5:5432')

    const err = toApiError(cause)

    expect(err.code).toBe('internal_error')
    expect(err.status).toBe(500)
    expect(err.cause).toBe(cause)
  })
})

describe('defineErrorCodes', () => {
  it('when a service defines a new code, then ApiError resolves it to the given status', () => {
    const code = uniqueCode('subdomain_not_found')

    defineErrorCodes({ [code]: 404 })
    const err = new ApiError(code as ErrorCode, 'no subdomain 42 on this account')

    expect(err.status).toBe(404)
  })

  it('when the same code is defined twice with the same status, then it is accepted', () => {
    const code = uniqueCode('insufficient_balance')
    defineErrorCodes({ [code]: 402 })

    expect(() => defineErrorCodes({ [code]: 402 })).not.toThrow()
    expect(statusOf(code as ErrorCode)).toBe(402)
  })

  it('when a code is redefined with a different status, then it throws and the first status stays', () => {
    const code = uniqueCode('quota_exceeded')
    defineErrorCodes({ [code]: 429 })

    expect(() => defineErrorCodes({ [code]: 403 })).toThrow(/already mapped to 429/)
    expect(statusOf(code as ErrorCode)).toBe(429)
  })

  it('when a core code is redefined with a different status, then it throws', () => {
    expect(() => defineErrorCodes({ not_found: 410 })).toThrow(/not_found/)
    expect(statusOf('not_found')).toBe(404)
  })

  it('when a code maps to a status outside 4xx/5xx, then it throws', () => {
    expect(() => defineErrorCodes({ [uniqueCode('fine')]: 200 })).toThrow(/4xx or 5xx/)
  })
})

describe('envelopes', () => {
  const notFound = new ApiError('not_found', 'no share with code ABC123', { code: 'ABC123' })
  const leaky = new ApiError('internal_error', 'password authentication failed for user "admin" at 10.0.0.5')
  const upstream = new ApiError('bad_gateway', 'PowerDNS at 10.1.2.3:8081 answered 500: stack trace …', {
    host: '10.1.2.3',
  })

  describe('status style (key-info)', () => {
    it('when a 4xx is rendered, then code is the HTTP status as an integer and the message is kept', () => {
      expect(renderStatusEnvelope(new ApiError('unauthorized', 'Missing Authentication header'))).toEqual({
        error: { code: 401, message: 'Missing Authentication header' },
      })
    })

    it('when a 500 is rendered, then the message is exactly "Internal Server Error"', () => {
      expect(renderStatusEnvelope(leaky)).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    })

    it('when any other 5xx is rendered, then its message is replaced by the reason phrase', () => {
      expect(renderStatusEnvelope(upstream)).toEqual({ error: { code: 502, message: 'Bad Gateway' } })
    })
  })

  describe('code style (design-archive, pickup-share)', () => {
    it('when a 4xx is rendered, then code is the error code string, with details and request id', () => {
      expect(renderCodeEnvelope(notFound, 'req-1')).toEqual({
        error: {
          code: 'not_found',
          message: 'no share with code ABC123',
          details: { code: 'ABC123' },
          request_id: 'req-1',
        },
      })
    })

    it('when a 5xx is rendered, then neither the message nor the details reach the client', () => {
      const body = renderCodeEnvelope(upstream, 'req-2')

      expect(body).toEqual({ error: { code: 'bad_gateway', message: 'bad gateway', request_id: 'req-2' } })
      expect(JSON.stringify(body)).not.toContain('10.1.2.3')
    })

    it('when no request id is given, then request_id is absent rather than empty', () => {
      expect(renderCodeEnvelope(notFound).error).not.toHaveProperty('request_id')
    })
  })

  describe('rest style (dns-manager)', () => {
    it('when a 4xx is rendered, then it is success:false with the code, details and request id', () => {
      expect(renderRestEnvelope(notFound, 'req-3')).toEqual({
        success: false,
        error: { code: 'not_found', message: 'no share with code ABC123', details: { code: 'ABC123' } },
        request_id: 'req-3',
      })
    })

    it('when a 500 is rendered, then the internal message is hidden', () => {
      const body = renderRestEnvelope(leaky)

      expect(body).toEqual({
        success: false,
        error: { code: 'internal_error', message: 'internal server error' },
      })
      expect(JSON.stringify(body)).not.toContain('password')
    })
  })

  describe('renderEnvelope dispatch', () => {
    it.each<[EnvelopeStyle, unknown]>([
      ['status', { error: { code: 404, message: 'no share with code ABC123' } }],
      [
        'code',
        {
          error: {
            code: 'not_found',
            message: 'no share with code ABC123',
            details: { code: 'ABC123' },
            request_id: 'r',
          },
        },
      ],
      [
        'rest',
        {
          success: false,
          error: { code: 'not_found', message: 'no share with code ABC123', details: { code: 'ABC123' } },
          request_id: 'r',
        },
      ],
    ])('when the style is %s, then that shape is rendered', (style, expected) => {
      expect(renderEnvelope(style, notFound, 'r')).toEqual(expected)
    })
  })

  describe('JSON-RPC error object', () => {
    it('when bad input is rendered, then the code is -32602 and data carries error_code and details', () => {
      const err = new ApiError('bad_request', 'ttl must be at least 60', { field: 'ttl' })

      expect(renderJsonRpcError(err, 'req-4')).toEqual({
        code: -32602,
        message: 'ttl must be at least 60',
        data: { error_code: 'bad_request', http_status: 400, details: { field: 'ttl' }, request_id: 'req-4' },
      })
    })

    it('when a domain 4xx is rendered, then the code is in the server range -32000', () => {
      expect(renderJsonRpcError(notFound)).toMatchObject({
        code: -32000,
        data: { error_code: 'not_found', http_status: 404 },
      })
    })

    it('when a 5xx is rendered, then the code is -32603 and message and details are hidden', () => {
      const rendered = renderJsonRpcError(upstream)

      expect(rendered).toEqual({
        code: -32603,
        message: 'bad gateway',
        data: { error_code: 'bad_gateway', http_status: 502 },
      })
    })
  })

  describe('GraphQL error', () => {
    it('when a 4xx is rendered, then extensions.code carries the error code and the http status', () => {
      const err = new ApiError('rate_limit_exceeded', 'slow down', { reset_at: '2030-01-01T00:00:00.000Z' })

      expect(renderGraphQLError(err, 'req-5')).toEqual({
        message: 'slow down',
        extensions: {
          code: 'rate_limit_exceeded',
          http: { status: 429 },
          details: { reset_at: '2030-01-01T00:00:00.000Z' },
          request_id: 'req-5',
        },
      })
    })

    it('when a 500 is rendered, then the message is generic', () => {
      expect(renderGraphQLError(leaky)).toEqual({
        message: 'internal server error',
        extensions: { code: 'internal_error', http: { status: 500 } },
      })
    })
  })
})

describe('errorMiddleware and notFoundMiddleware in an express app', () => {
  function appWith(style: EnvelopeStyle): Express {
    const app = express()
    app.use((req, _res, next) => {
      ;(req as { id?: string }).id = 'req-test'
      next()
    })
    app.use(express.json({ limit: '100b' }))
    app.get('/domain', () => {
      throw new ApiError(
        'rate_limit_exceeded',
        'slow down',
        { reset_at: '2030-01-01T00:00:00.000Z' },
        {
          headers: { 'Retry-After': '7' },
        },
      )
    })
    app.get('/crash', async () => {
      throw new Error('relation "secret_table" does not exist')
    })
    app.post('/echo', (req, res) => {
      res.json(req.body)
    })
    app.use(notFoundMiddleware())
    app.use(errorMiddleware({ style }))
    return app
  }

  it('when a handler throws an ApiError, then the status, envelope and its headers are sent', async () => {
    const res = await request(appWith('rest')).get('/domain')

    expect(res.status).toBe(429)
    expect(res.headers['retry-after']).toBe('7')
    expect(res.body).toEqual({
      success: false,
      error: {
        code: 'rate_limit_exceeded',
        message: 'slow down',
        details: { reset_at: '2030-01-01T00:00:00.000Z' },
      },
      request_id: 'req-test',
    })
  })

  it('when an async handler throws a plain Error, then it is a 500 with no internals (status style)', async () => {
    const res = await request(appWith('status')).get('/crash')

    expect(res.status).toBe(500)
    expect(res.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    expect(res.text).not.toContain('secret_table')
  })

  it('when an async handler throws a plain Error, then it is a 500 with no internals (code style)', async () => {
    const res = await request(appWith('code')).get('/crash')

    expect(res.status).toBe(500)
    expect(res.body).toEqual({
      error: { code: 'internal_error', message: 'internal server error', request_id: 'req-test' },
    })
  })

  it('when a route does not exist, then it is a JSON 404 in the envelope naming method and path', async () => {
    const res = await request(appWith('code')).delete('/nope/123')

    expect(res.status).toBe(404)
    expect(res.headers['content-type']).toMatch(/application\/json/)
    expect(res.body).toEqual({
      error: { code: 'not_found', message: 'no route for DELETE /nope/123', request_id: 'req-test' },
    })
  })

  it('when the JSON body is malformed, then it is a 400 bad_request, not a 500', async () => {
    const res = await request(appWith('status'))
      .post('/echo')
      .set('Content-Type', 'application/json')
      .send('{"a":')

    expect(res.status).toBe(400)
    expect(res.body).toEqual({ error: { code: 400, message: 'request body is not valid JSON' } })
  })

  it('when the body is over the limit, then it is a 413 payload_too_large', async () => {
    const res = await request(appWith('code'))
      .post('/echo')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ a: 'x'.repeat(500) }))

    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('payload_too_large')
  })
})
