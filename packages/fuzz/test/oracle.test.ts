import { acceptedStyles, judge, stylesOf } from '../src/oracle.ts'
import { parseResponse, serialize, type WireOutcome } from '../src/wire.ts'

/** An answer as the wire client would have read it. */
function answer(status: number, body: unknown, headers: Record<string, string> = {}): WireOutcome {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  return {
    ok: true,
    response: {
      status,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r', ...headers },
      rawHeaders: [],
      body: Buffer.from(text),
    },
  }
}

describe('the oracle', () => {
  it('when an answer is a 5xx, then it is a problem, whatever its body', () => {
    expect(judge(answer(500, { error: { code: 500, message: 'x' } }), ['status'], 'GET')).toMatch(
      /status 500/,
    )
    expect(
      judge(answer(503, { error: { code: 'service_unavailable', message: 'x' } }), ['code'], 'GET'),
    ).toMatch(/status 503/)
  })

  it('when the connection was reset or hung, then it is a problem', () => {
    const reset: WireOutcome = { ok: false, failure: { kind: 'reset', detail: 'ECONNRESET' } }
    const hang: WireOutcome = { ok: false, failure: { kind: 'timeout', detail: 'no answer' } }
    expect(judge(reset, ['code'], 'PUT')).toMatch(/reset/)
    expect(judge(hang, ['code'], 'GET')).toMatch(/timeout/)
  })

  it.each([
    ['status', { error: { code: 404, message: 'no' } }, null],
    ['status', { error: { code: 'not_found', message: 'no' } }, /not the status/],
    ['code', { error: { code: 'not_found', message: 'no', request_id: 'r' } }, null],
    ['code', { message: 'no' }, /no error object/],
    ['rest', { success: false, error: { code: 'not_found', message: 'no' } }, null],
    ['rest', { error: { code: 'not_found', message: 'no' } }, /success is not false/],
    [
      'rpc',
      { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'no', data: { error_code: 'not_found' } } },
      null,
    ],
    ['rpc', { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'no' } }, /error_code/],
    ['graphql', { errors: [{ message: 'no', extensions: { code: 'not_found' } }] }, null],
    [
      'graphql',
      { errors: [{ message: 'no', extensions: { code: 'GRAPHQL_PARSE_FAILED' } }] },
      /extensions.code/,
    ],
  ] as const)(
    'when a 404 in the %s style is %j, then the envelope check says %s',
    (style, body, expected) => {
      const problem = judge(answer(404, body), [style], 'GET')
      if (expected === null) expect(problem).toBeNull()
      else expect(problem).toMatch(expected)
    },
  )

  it('when an error is not JSON (an empty body, text/html), then it is a problem', () => {
    expect(judge(answer(417, '', { 'content-type': '' }), ['status'], 'GET')).toMatch(/not JSON/)
    expect(
      judge(
        answer(400, { error: { code: 'bad_request', message: 'x' } }, { 'content-type': 'text/html' }),
        ['code'],
        'GET',
      ),
    ).toMatch(/text\/html/)
  })

  it('when a 200 JSON-RPC batch or GraphQL answer carries an error outside the envelope, then it is a problem', () => {
    const batch = [
      { jsonrpc: '2.0', id: 1, result: {} },
      { jsonrpc: '2.0', id: 2, error: { code: -32600, message: 'x' } },
    ]
    expect(judge(answer(200, batch), ['rpc'], 'POST')).toMatch(/error_code/)
    expect(judge(answer(200, { data: null, errors: [{ message: 'x' }] }), ['graphql'], 'POST')).toMatch(
      /extensions.code/,
    )
    expect(judge(answer(204, ''), ['rpc'], 'POST')).toBeNull()
  })

  it('when dns-manager is asked on its JSON-RPC or GraphQL path, then that style is expected; an answer made before any route may be REST', () => {
    expect(stylesOf('dns-manager', 'POST', '/api/v1/rpc')).toEqual(['rpc'])
    expect(stylesOf('dns-manager', 'GET', '/GRAPHQL?x')).toEqual(['graphql'])
    expect(stylesOf('dns-manager', 'POST', 'http://evil.example/rpc')).toEqual(['rpc'])
    expect(stylesOf('dns-manager', 'GET', '/rest/quota')).toEqual(['rest'])
    // A parser's answer has a request id (issue 48) but none of the pipeline's security headers.
    const parserAnswer = answer(431, {
      success: false,
      error: { code: 'header_fields_too_large', message: 'x' },
      request_id: 'r',
    })
    expect(acceptedStyles('dns-manager', 'GET', '/graphql', parserAnswer)).toEqual(['graphql', 'rest'])
    const routeAnswer = answer(400, { errors: [] }, { 'x-content-type-options': 'nosniff' })
    expect(acceptedStyles('dns-manager', 'GET', '/graphql', routeAnswer)).toEqual(['graphql'])
  })
})

describe('the wire client', () => {
  it('when an answer comes after 100 Continue and chunked, then the parser reads the final answer whole', () => {
    const raw = Buffer.from(
      'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
    )
    const parsed = parseResponse(raw, false)
    expect(parsed.complete).toBe(true)
    expect(parsed.response?.status).toBe(404)
    expect(parsed.response?.body.toString()).toBe('abcde')
    expect(
      parseResponse(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'), false).complete,
    ).toBe(false)
  })

  it('when a request has bytes that are not UTF-8 in a header, then they go on the wire as they are', () => {
    const bytes = serialize({ method: 'GET', target: '/x', headers: [['X-A', '\xff\xfe']], host: null }, 'h')
    expect(bytes.includes(Buffer.from([0x58, 0x2d, 0x41, 0x3a, 0x20, 0xff, 0xfe]))).toBe(true)
    expect(bytes.toString('latin1')).not.toMatch(/Host:/)
  })
})
