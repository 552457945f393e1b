import http from 'node:http'
import net from 'node:net'
import { serve, type Serving } from '@quartet/core/http'
import { silentLogger } from '@quartet/core/testing'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

/** A request as node's client sends it: an array value goes out as one header line per item. */
function send(
  url: string,
  path: string,
  headers: http.OutgoingHttpHeaders,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { headers, agent: false }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end()
  })
}

describe('key-info refuses what it cannot read unambiguously (issue 48)', () => {
  let serving: Serving
  beforeAll(async () => {
    serving = await serve(buildApp(deps), {
      port: 0,
      host: '127.0.0.1',
      logger: silentLogger(),
      handleSignals: false,
      exitProcess: false,
      shutdownTimeoutMs: 1000,
    })
  })
  afterAll(async () => {
    serving.server.closeAllConnections()
    await serving.shutdown()
  })

  it.each([
    ['GET /api/v1/key (the hot route)', '/api/v1/key'],
    ['GET /api/v1/key?x=1 (express)', '/api/v1/key?x=1'],
    ['GET /api/v1/keys (a management route)', '/api/v1/keys'],
  ])(
    'when %s carries two Authorization lines, a valid key and a bogus one, then 400: which credential was meant is ambiguous',
    async (_name, path) => {
      const k = await mintKey(deps, { isManagementKey: true })
      const single = await send(serving.url, path, bearer(k.key))
      expect(single.status).toBe(200)

      for (const pair of [
        [`Bearer ${k.key}`, 'Bearer sk-qk-v1-bogus'],
        ['Bearer sk-qk-v1-bogus', `Bearer ${k.key}`],
        [`Bearer ${k.key}`, `Bearer ${k.key}`],
      ]) {
        const res = await send(serving.url, path, { Authorization: pair })
        expect(res.status).toBe(400)
        expect(res.body).toEqual({
          error: { code: 400, message: 'send exactly one Authorization header, not several' },
        })
        expect(res.headers['x-request-id']).toEqual(expect.any(String))
      }
    },
  )

  it('when the headers are too large (a real 20 kB header line), then 431 in the envelope with an X-Request-Id', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(serving.port, '127.0.0.1', () =>
        socket.write(`GET /api/v1/key HTTP/1.1\r\nHost: keys\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
      )
      let text = ''
      socket.on('data', (chunk) => {
        text += chunk.toString('latin1')
        // The whole answer is in once its body (Content-Length) is: then close our side.
        const head = text.indexOf('\r\n\r\n')
        const length = /\r\nContent-Length: (\d+)\r\n/i.exec(text)?.[1]
        if (head >= 0 && length && text.length >= head + 4 + Number(length)) {
          socket.destroy()
          resolve(text)
        }
      })
      socket.on('error', reject)
    })
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large')
    const id = /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/.exec(answer)?.[1]
    expect(id).toEqual(expect.any(String))
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
      error: { code: 431, message: 'request line or headers are too large' },
    })
  })
})
