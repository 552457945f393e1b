import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import express, { type Express } from 'express'
import { request } from '../src/testing.ts'
import { ApiError } from '../src/errors.ts'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import {
  answerBeforeExpress,
  createHttpApp,
  HotAnswer,
  type HotRoute,
  type HttpAppOptions,
  isKeptBody,
  JsonBodies,
  onServer,
  requestListener,
  serve,
} from '../src/http.ts'
import { captureLogger, metricsText, silentLogger, startTestServer } from '../src/testing.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

function buildApp(overrides: Partial<HttpAppOptions> = {}) {
  const captured = captureLogger('http-test')
  const { app, metrics } = createHttpApp(
    { name: 'http-test', logger: captured.logger, envelope: 'code', trustProxy: ['loopback'], ...overrides },
    (app) => {
      app.get('/items/:id', (req, res) => {
        res.json({ id: req.params.id })
      })
      app.post('/echo', (req, res) => {
        res.json({ body: req.body })
      })
      app.get('/whoami', (req, res) => {
        res.json({ ip: req.ip })
      })
      app.get('/audit', (req, res) => {
        req.log.info({ action: 'audit' }, 'handler says hello')
        res.json({ ok: true })
      })
      app.get('/boom', () => {
        throw new ApiError('forbidden', 'not yours')
      })
      const api = express.Router()
      api.get('/things/:thingId', (req, res) => {
        res.json({ id: req.params.thingId })
      })
      api.get('/locked/:thingId', async () => {
        throw new ApiError('conflict', 'locked')
      })
      app.use('/api/v1', api)
    },
  )
  return { app, metrics, lines: captured.lines }
}

/** The request logger writes its completion line when the response closes; give it a tick to land. */
async function completionLine(lines: Array<Record<string, unknown>>, reqId: string) {
  for (let i = 0; i < 50; i++) {
    const line = lines.find(
      (l) => l.req_id === reqId && (l.msg === 'request completed' || l.msg === 'request errored'),
    )
    if (line) return line
    await sleep(10)
  }
  throw new Error(`no completion log line for ${reqId}; lines: ${JSON.stringify(lines)}`)
}

describe('createHttpApp', () => {
  describe('health endpoints', () => {
    it('when /healthz is asked, then it answers 200 ok, uncached', async () => {
      const { app } = buildApp()

      const res = await request(app).get('/healthz')

      expect(res.status).toBe(200)
      expect(res.body).toEqual({ status: 'ok' })
      expect(res.headers['cache-control']).toBe('no-store')
    })

    it('when every readiness check passes, then /readyz is 200 listing each check', async () => {
      const { app } = buildApp({ readiness: { database: async () => 1, redis: async () => 'PONG' } })

      const res = await request(app).get('/readyz')

      expect(res.status).toBe(200)
      expect(res.body).toEqual({ status: 'ok', checks: { database: 'ok', redis: 'ok' } })
    })

    it('when no checks are registered, then /readyz is 200', async () => {
      const { app } = buildApp()

      await request(app).get('/readyz').expect(200)
    })

    it('when a check fails, then /readyz is 503 naming the failing check', async () => {
      const { app } = buildApp({
        readiness: {
          database: async () => 1,
          redis: async () => {
            throw new Error('connect ECONNREFUSED 127.0.0.1:6379')
          },
        },
      })

      const res = await request(app).get('/readyz')

      expect(res.status).toBe(503)
      expect(res.body).toEqual({
        status: 'unavailable',
        checks: { database: 'ok', redis: 'unreachable' },
        failing: ['redis'],
      })
      expect(res.text).not.toContain('ECONNREFUSED')
    })

    it('when a proxy asks /readyz?scope=process, then a failing dependency is not its concern: 200 without checks', async () => {
      const { app } = buildApp({
        readiness: {
          database: async () => {
            throw new Error('connect ECONNREFUSED 127.0.0.1:5432')
          },
        },
      })

      await request(app).get('/readyz').expect(503)
      const res = await request(app).get('/readyz?scope=process')

      expect(res.status).toBe(200)
      expect(res.body).toEqual({ status: 'ok', checks: {} })
    })

    it('when a check is slower than the timeout, then /readyz is 503 with that check timed out, promptly', async () => {
      const { app } = buildApp({
        readinessTimeoutMs: 100,
        readiness: { database: async () => 1, storage: () => sleep(5_000) },
      })
      const started = Date.now()

      const res = await request(app).get('/readyz')

      expect(res.status).toBe(503)
      expect(res.body.checks).toEqual({ database: 'ok', storage: 'timeout' })
      expect(res.body.failing).toEqual(['storage'])
      expect(Date.now() - started).toBeLessThan(2_000)
    })

    describe('a slow ping is not a dead dependency (issue 48: no flapping under load)', () => {
      it('when a check passes its deadline while the dependency answered other work sent after the check began, then /readyz stays 200 and reports it slow', async () => {
        let answered = 0
        let asked = 0
        const { app } = buildApp({
          readinessTimeoutMs: 100,
          readiness: {
            database: {
              check: () => sleep(300),
              progress: () => {
                const before = answered
                // Other work answered meanwhile, as a busy server does.
                setTimeout(() => answered++, 20)
                return () => {
                  asked++
                  return answered > before
                }
              },
            },
          },
        })

        const res = await request(app).get('/readyz')

        expect(res.status).toBe(200)
        expect(res.body).toEqual({ status: 'ok', checks: { database: 'slow' } })
        expect(asked).toBe(1)
      })

      it('when a check passes its deadline and the dependency answered nothing sent since (frozen), then /readyz is 503 timeout', async () => {
        const { app } = buildApp({
          readinessTimeoutMs: 100,
          readiness: { database: { check: () => new Promise(() => undefined), progress: () => () => false } },
        })

        const res = await request(app).get('/readyz')

        expect(res.status).toBe(503)
        expect(res.body).toEqual({
          status: 'unavailable',
          checks: { database: 'timeout' },
          failing: ['database'],
        })
      })

      it('when a check fails outright, then /readyz is 503 however busy the dependency was: only slowness is forgiven', async () => {
        const { app } = buildApp({
          readiness: {
            database: {
              check: async () => {
                throw new Error('connect ECONNREFUSED 127.0.0.1:5432')
              },
              progress: () => () => true,
            },
          },
        })

        const res = await request(app).get('/readyz')

        expect(res.status).toBe(503)
        expect(res.body.checks).toEqual({ database: 'unreachable' })
      })

      it('when this process is busy past the deadline while the dependency’s answer arrives, then /readyz is 200 ok: the process’s own lateness is not the dependency’s', async () => {
        // The dependency: a TCP server on a thread of its own, which answers while this one is busy.
        const peer = new Worker(
          `const net = require('node:net'), { parentPort } = require('node:worker_threads')
           const server = net.createServer((s) => s.on('data', () => s.write('pong')))
           server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port))`,
          { eval: true },
        )
        try {
          const [port] = (await once(peer, 'message')) as [number]
          const socket = net.connect(port, '127.0.0.1')
          await once(socket, 'connect')
          const { app } = buildApp({
            readinessTimeoutMs: 100,
            readiness: {
              database: async () => {
                const answer = once(socket, 'data')
                socket.write('ping')
                // Asked, then this thread held for three deadlines: the answer waits in the socket.
                const until = Date.now() + 300
                while (Date.now() < until);
                await answer
              },
            },
          })
          const server = await startTestServer(app)
          try {
            const res = await fetch(`${server.url}/readyz`)

            expect(res.status).toBe(200)
            expect(await res.json()).toEqual({ status: 'ok', checks: { database: 'ok' } })
          } finally {
            socket.destroy()
            await server.close()
          }
        } finally {
          await peer.terminate()
        }
      })
    })

    it('when an optional check (Redis, which the service can do without) fails, then /readyz stays 200 and says degraded', async () => {
      const { app } = buildApp({
        readiness: {
          database: async () => 1,
          kv: {
            optional: true,
            check: async () => {
              throw new Error('kv not connected')
            },
          },
        },
      })

      const res = await request(app).get('/readyz').expect(200)

      expect(res.body).toEqual({
        status: 'degraded',
        checks: { database: 'ok', kv: 'unreachable' },
        degraded: ['kv'],
      })
    })

    it('when the default timeout applies and a check hangs, then /readyz answers within a second', async () => {
      const { app } = buildApp({ readiness: { database: () => sleep(5_000) } })
      const started = Date.now()

      await request(app).get('/readyz').expect(503)

      expect(Date.now() - started).toBeLessThan(1_000)
    })
  })

  describe('metrics', () => {
    it('when no METRICS_TOKEN is set, then the public port has no /metrics', async () => {
      const { app } = buildApp()

      const res = await request(app).get('/metrics').expect(404)

      expect(res.body.error.code).toBe('not_found')
    })

    it('when a METRICS_TOKEN is set, then /metrics on the public port needs it as a bearer token', async () => {
      const { app } = buildApp({ metricsToken: 'scrape-token-0123456789' })

      const missing = await request(app).get('/metrics').expect(401)
      await request(app).get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789').expect(401)
      const res = await request(app)
        .get('/metrics')
        .set('Authorization', 'Bearer scrape-token-0123456789')
        .expect(200)

      expect(missing.headers['www-authenticate']).toMatch(/^Bearer/)
      expect(res.headers['cache-control']).toBe('no-store')
      expect(res.text).toContain('http_requests_total')
    })

    it('when node refuses a request before it exists (huge headers, a bad byte), then the answer is still in the envelope', async () => {
      const { app } = buildApp()
      const serving = await serve(app, {
        port: 0,
        host: '127.0.0.1',
        logger: captureLogger().logger,
        handleSignals: false,
        exitProcess: false,
      })
      const raw = (request: string) =>
        new Promise<string>((resolve) => {
          const socket = net.connect(serving.port, '127.0.0.1', () => socket.write(request))
          let answer = ''
          socket.on('data', (chunk) => (answer += chunk.toString('latin1')))
          socket.on('close', () => resolve(answer))
          socket.on('error', () => resolve(answer))
        })
      try {
        const huge = await raw(`GET /items/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
        const bad = await raw('GET /items/\x01 HTTP/1.1\r\nHost: x\r\n\r\n')
        for (const [answer, status, code] of [
          [huge, 431, 'header_fields_too_large'],
          [bad, 400, 'bad_request'],
        ] as const) {
          expect(answer.split('\r\n')[0]).toBe(
            `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}`,
          )
          expect(answer).toMatch(/Content-Type: application\/json; charset=utf-8/)
          // Issue 48: these carry a request id too, in the envelope and X-Request-Id alike.
          const id = /\r\nX-Request-Id: ([0-9a-f-]{36})\r\n/.exec(answer)?.[1]
          expect(id).toEqual(expect.any(String))
          expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({
            error: { code, message: expect.any(String), request_id: id },
          })
        }
      } finally {
        await serving.shutdown()
      }
    })

    it('when a request line is refused (431) while the client is still sending it, then the client reads the answer: no reset', async () => {
      const { app } = buildApp()
      const serving = await serve(app, {
        port: 0,
        host: '127.0.0.1',
        logger: captureLogger().logger,
        handleSignals: false,
        exitProcess: false,
      })
      try {
        const outcome = await new Promise<{ answer: string; error?: string }>((resolve) => {
          let answer = ''
          // allowHalfOpen: the server's FIN does not stop this client from sending.
          const socket = net.connect({ port: serving.port, host: '127.0.0.1', allowHalfOpen: true }, () => {
            // Past the 16 kB header limit: the 431 comes while the request line is not over.
            socket.write(`GET /items/1?q=${'a'.repeat(40_000)}`)
          })
          socket.on('data', async (chunk) => {
            const first = answer === ''
            answer += chunk.toString('latin1')
            if (!first) return
            // A client that does not read while it writes goes on sending the rest of its request.
            for (let i = 0; i < 20 && !socket.destroyed; i++) {
              socket.write('a'.repeat(20_000))
              await new Promise((r) => setTimeout(r, 5))
            }
            if (!socket.destroyed) socket.end(' HTTP/1.1\r\nHost: x\r\n\r\n')
          })
          socket.on('close', () => resolve({ answer }))
          socket.on('error', (err: NodeJS.ErrnoException) => resolve({ answer, error: err.code }))
        })
        expect(outcome.error).toBeUndefined()
        expect(outcome.answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large')
      } finally {
        await serving.shutdown()
      }
    })

    it.each([
      ['an unknown route', '/nowhere'],
      ['a malformed query', '/items/1?%ff='],
    ])(
      'when a request with a big body is refused before it is read (%s), then the client reads the answer: no reset',
      async (_what, target) => {
        const { app } = buildApp()
        const serving = await serve(app, {
          port: 0,
          host: '127.0.0.1',
          logger: captureLogger().logger,
          handleSignals: false,
          exitProcess: false,
        })
        try {
          const size = 4 * 1024 * 1024
          const outcome = await new Promise<{ answer: string; error?: string }>((resolve) => {
            let answer = ''
            const socket = net.connect({ port: serving.port, host: '127.0.0.1', allowHalfOpen: true }, () => {
              socket.write(
                `PUT ${target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
                  `Content-Length: ${size}\r\nConnection: close\r\n\r\n${'a'.repeat(64 * 1024)}`,
              )
            })
            socket.on('data', async (chunk) => {
              const first = answer === ''
              answer += chunk.toString('latin1')
              if (!first) return
              // The rest of the body, as a client that does not read while it writes sends it.
              for (let sent = 64 * 1024; sent < size && !socket.destroyed; sent += 256 * 1024) {
                socket.write('a'.repeat(Math.min(256 * 1024, size - sent)))
                await new Promise((r) => setTimeout(r, 5))
              }
              if (!socket.destroyed) socket.end()
            })
            socket.on('close', () => resolve({ answer }))
            socket.on('error', (err: NodeJS.ErrnoException) => resolve({ answer, error: err.code }))
          })
          expect(outcome.error).toBeUndefined()
          expect(outcome.answer.split('\r\n')[0]).toMatch(/^HTTP\/1\.1 (400|404) /)
        } finally {
          await serving.shutdown()
        }
      },
    )

    it('when a request has no Host header or an Expect node does not know, then the answer is in the envelope', async () => {
      const { app } = buildApp()
      const serving = await serve(app, {
        port: 0,
        host: '127.0.0.1',
        logger: captureLogger().logger,
        handleSignals: false,
        exitProcess: false,
      })
      const raw = (request: string) =>
        new Promise<string>((resolve) => {
          const socket = net.connect(serving.port, '127.0.0.1', () => socket.write(request))
          let answer = ''
          socket.on('data', (chunk) => (answer += chunk.toString('latin1')))
          socket.on('close', () => resolve(answer))
          socket.on('error', () => resolve(answer))
        })
      const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as unknown
      try {
        const noHost = await raw('GET /items/1 HTTP/1.1\r\nConnection: close\r\n\r\n')
        expect(noHost.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request')
        expect(noHost).toMatch(/X-Request-Id: /i)
        expect(bodyOf(noHost)).toEqual({
          error: {
            code: 'bad_request',
            message: expect.stringMatching(/Host/),
            request_id: expect.any(String),
          },
        })
        // HTTP/1.0 has no Host requirement.
        const old = await raw('GET /items/1 HTTP/1.0\r\n\r\n')
        expect(old.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')

        for (const expectation of ['', 'something-else', 'caf\xe9']) {
          const answer = await raw(
            `GET /items/7 HTTP/1.1\r\nHost: x\r\nExpect: ${expectation}\r\nConnection: close\r\n\r\n`,
          )
          expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK')
          expect(bodyOf(answer)).toEqual({ id: '7' })
        }
        const missing = await raw(
          'GET /nope HTTP/1.1\r\nHost: x\r\nExpect: nope\r\nConnection: close\r\n\r\n',
        )
        expect(missing.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found')
        expect(bodyOf(missing)).toMatchObject({ error: { code: 'not_found' } })
      } finally {
        await serving.shutdown()
      }
    })

    it('when serve has a metrics port, then the scraper reads /metrics there and nothing else', async () => {
      const { app } = buildApp()
      const serving = await serve(app, {
        port: 0,
        host: '127.0.0.1',
        metricsPort: 0,
        logger: captureLogger().logger,
        handleSignals: false,
        exitProcess: false,
      })
      try {
        await fetch(`${serving.url}/items/1`)
        const res = await fetch(serving.metricsUrl!)
        const other = await fetch(serving.metricsUrl!.replace('/metrics', '/items/1'))

        expect(res.status).toBe(200)
        expect(res.headers.get('content-type')).toMatch(/^text\/plain/)
        expect(await res.text()).toMatch(/http_requests_total\{[^}]*route="\/items\/:id"/)
        expect(other.status).toBe(404)
      } finally {
        await serving.shutdown()
      }
    })

    it('when requests hit a parameterised route, then http_requests_total counts them by route template', async () => {
      const { app } = buildApp()
      await request(app).get('/items/42').expect(200)
      await request(app).get('/items/43').expect(200)
      await request(app).get('/api/v1/things/7').expect(200)

      const res = { text: await metricsText(app) }

      const counter = res.text.split('\n').filter((l) => l.startsWith('http_requests_total{'))
      expect(counter).toContainEqual(expect.stringMatching(/route="\/items\/:id".*status="200".* 2$/))
      expect(counter).toContainEqual(
        expect.stringMatching(/route="\/api\/v1\/things\/:thingId".*status="200".* 1$/),
      )
      expect(res.text).not.toContain('/items/42')
      expect(res.text).not.toContain('/things/7')
      expect(res.text).toContain('http_request_duration_seconds_bucket')
    })

    it('when requests hit unknown paths, then they share one "unmatched" label instead of one per path', async () => {
      const { app } = buildApp()
      await request(app).get('/random/a1')
      await request(app).get('/random/b2')

      const res = { text: await metricsText(app) }

      expect(res.text).toMatch(/http_requests_total\{[^}]*route="unmatched"[^}]*status="404"[^}]*\} 2/)
      expect(res.text).not.toContain('/random/')
    })

    it('when a route throws, then the request is still counted under its template with the error status', async () => {
      const { app } = buildApp()
      await request(app).get('/boom').expect(403)

      const res = { text: await metricsText(app) }

      expect(res.text).toMatch(/http_requests_total\{[^}]*route="\/boom"[^}]*status="403"[^}]*\} 1/)
    })

    it('when a route inside a mounted router throws, then its template keeps the mount path', async () => {
      const { app } = buildApp()
      await request(app).get('/api/v1/locked/3').expect(409)

      const res = { text: await metricsText(app) }

      expect(res.text).toMatch(
        /http_requests_total\{[^}]*route="\/api\/v1\/locked\/:thingId"[^}]*status="409"[^}]*\} 1/,
      )
    })
  })

  describe('request id', () => {
    it('when a well-formed X-Request-Id comes in, then it is echoed and used in the log', async () => {
      const { app, lines } = buildApp()

      const res = await request(app).get('/items/1').set('X-Request-Id', 'edge-7f3a.91:x_y')

      expect(res.headers['x-request-id']).toBe('edge-7f3a.91:x_y')
      expect((await completionLine(lines, 'edge-7f3a.91:x_y')).req_id).toBe('edge-7f3a.91:x_y')
    })

    it.each([
      ['spaces', 'has spaces in it'],
      ['a log-injection attempt', 'abc\\n{"level":"fatal"}'],
      ['129 characters', 'a'.repeat(129)],
    ])('when the incoming X-Request-Id has %s, then a fresh UUID replaces it', async (_case, incoming) => {
      const { app } = buildApp()

      const res = await request(app).get('/items/1').set('X-Request-Id', incoming)

      expect(res.headers['x-request-id']).toMatch(UUID)
    })

    it('when there is no X-Request-Id, then one is made and put in the error envelope too', async () => {
      const { app } = buildApp()

      const res = await request(app).get('/boom')

      expect(res.headers['x-request-id']).toMatch(UUID)
      expect(res.body).toEqual({
        error: { code: 'forbidden', message: 'not yours', request_id: res.headers['x-request-id'] },
      })
    })
  })

  describe('bodies and unknown routes in the envelope', () => {
    it('when a JSON body is sent, then the handler receives it parsed', async () => {
      const { app } = buildApp()

      const res = await request(app).post('/echo').send({ name: 'x' })

      expect(res.body).toEqual({ body: { name: 'x' } })
    })

    it('when the JSON body is malformed, then it is a 400 bad_request envelope', async () => {
      const { app } = buildApp()

      const res = await request(app).post('/echo').set('Content-Type', 'application/json').send('{"name": ')

      expect(res.status).toBe(400)
      expect(res.body).toEqual({
        error: {
          code: 'bad_request',
          message: 'request body is not valid JSON',
          request_id: res.headers['x-request-id'],
        },
      })
    })

    it('when the body is over the configured limit, then it is a 413 payload_too_large envelope', async () => {
      const { app } = buildApp({ bodyLimit: '1kb' })

      const res = await request(app)
        .post('/echo')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ blob: 'x'.repeat(2048) }))

      expect(res.status).toBe(413)
      expect(res.body.error).toMatchObject({
        code: 'payload_too_large',
        message: expect.stringContaining('1024'),
      })
    })

    it('when the body is under the default 1 MB limit but over 100 kB, then it is accepted', async () => {
      const { app } = buildApp()

      const res = await request(app)
        .post('/echo')
        .send({ blob: 'x'.repeat(200_000) })

      expect(res.status).toBe(200)
    })

    it('when a route does not exist, then it is a 404 not_found envelope', async () => {
      const { app } = buildApp({ envelope: 'status' })

      const res = await request(app).get('/no/such/thing')

      expect(res.status).toBe(404)
      expect(res.body).toEqual({ error: { code: 404, message: 'no route for GET /no/such/thing' } })
    })

    it('when any answer is sent, then helmet headers are on it and X-Powered-By is not', async () => {
      const { app } = buildApp()

      const res = await request(app).get('/healthz')

      expect(res.headers['x-content-type-options']).toBe('nosniff')
      expect(res.headers['x-powered-by']).toBeUndefined()
    })
  })

  describe('trust proxy and the client address', () => {
    it('when the proxy is on loopback and trusted, then req.ip is the address it forwarded', async () => {
      const { app } = buildApp({ trustProxy: ['loopback'] })

      const res = await request(app).get('/whoami').set('X-Forwarded-For', '203.0.113.5')

      expect(res.body.ip).toBe('203.0.113.5')
    })

    it('when a client prepends a spoofed address, then req.ip is the one the trusted proxy saw', async () => {
      const { app } = buildApp({ trustProxy: ['loopback'] })

      const res = await request(app).get('/whoami').set('X-Forwarded-For', '198.51.100.66, 203.0.113.5')

      expect(res.body.ip).toBe('203.0.113.5')
    })

    it('when trust proxy is 0, then X-Forwarded-For is ignored and req.ip is the socket peer', async () => {
      const { app } = buildApp({ trustProxy: 0 })

      const res = await request(app).get('/whoami').set('X-Forwarded-For', '203.0.113.5')

      expect(res.body.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/)
    })

    it('when the trusted list does not include the peer, then X-Forwarded-For is ignored', async () => {
      const { app } = buildApp({ trustProxy: ['10.0.0.0/8'] })

      const res = await request(app).get('/whoami').set('X-Forwarded-For', '203.0.113.5')

      expect(res.body.ip).toMatch(/^(::ffff:)?127\.0\.0\.1$/)
    })
  })

  describe('the log line', () => {
    it('when a request completes, then its line has ip, req_id, method, url and status', async () => {
      const { app, lines } = buildApp({ trustProxy: ['loopback'] })

      await request(app)
        .get('/items/9?x=1')
        .set('X-Request-Id', 'log-line-1')
        .set('X-Forwarded-For', '203.0.113.5')

      const line = await completionLine(lines, 'log-line-1')
      expect(line).toMatchObject({
        level: 'info',
        ip: '203.0.113.5',
        req_id: 'log-line-1',
        req: { method: 'GET', url: '/items/9?x=1' },
        res: { statusCode: 200 },
      })
    })

    it('when credentials are sent, then Authorization, X-API-Key, X-API-Secret and cookies are redacted', async () => {
      const { app, lines } = buildApp()

      await request(app)
        .get('/items/9')
        .set('X-Request-Id', 'log-line-2')
        .set('Authorization', 'Bearer sk-qk-v1-supersecrettoken')
        .set('X-API-Key', 'key-visible-nowhere')
        .set('X-API-Secret', 'secret-visible-nowhere')
        .set('Cookie', 'admin_session=cookie-visible-nowhere')

      const line = await completionLine(lines, 'log-line-2')
      const headers = (line.req as { headers: Record<string, unknown> }).headers
      expect(headers.authorization).toBe('[redacted]')
      expect(headers['x-api-secret']).toBe('[redacted]')
      const everything = JSON.stringify(lines)
      for (const secret of [
        'supersecrettoken',
        'key-visible-nowhere',
        'secret-visible-nowhere',
        'cookie-visible-nowhere',
      ]) {
        expect(everything).not.toContain(secret)
      }
    })

    it('when the URL carries a pickup code, a token or a signature, then the logged URL has them redacted', async () => {
      const { app, lines } = buildApp()

      await request(app)
        .get(
          '/items/9?code=12345678&path=a.txt&Token=tok-visible-nowhere&X-Amz-Signature=sig-visible-nowhere',
        )
        .set('X-Request-Id', 'log-line-3')

      const line = await completionLine(lines, 'log-line-3')
      expect((line.req as { url: string }).url).toBe(
        '/items/9?code=[redacted]&path=a.txt&Token=[redacted]&X-Amz-Signature=[redacted]',
      )
      const everything = JSON.stringify(lines)
      for (const secret of ['12345678', 'tok-visible-nowhere', 'sig-visible-nowhere'])
        expect(everything).not.toContain(secret)
    })

    it("when a handler logs through req.log, then its own line carries the request's req_id and ip", async () => {
      const { app, lines } = buildApp()

      await request(app).get('/audit').set('X-Request-Id', 'log-line-4').set('X-Forwarded-For', '203.0.113.9')

      expect(lines.find((l) => l.msg === 'handler says hello')).toMatchObject({
        action: 'audit',
        req_id: 'log-line-4',
        ip: '203.0.113.9',
      })
    })

    it('when a handler fails with a 5xx, then the line is logged at error level', async () => {
      const captured = captureLogger('http-test')
      const { app } = createHttpApp(
        { name: 'http-test', logger: captured.logger, envelope: 'code', trustProxy: 0 },
        (app) => {
          app.get('/crash', () => {
            throw new Error('kaboom')
          })
        },
      )

      await request(app).get('/crash').set('X-Request-Id', 'log-line-3').expect(500)

      const line = await completionLine(captured.lines, 'log-line-3')
      expect(line.level).toBe('error')
    })
  })
})

describe('hot routes', () => {
  /** One handler, served both as a hot route and by express (which takes `/fast/`, HEAD, `?q`). */
  function buildHotApp(handle: HotRoute['handle'], overrides: Partial<HttpAppOptions> = {}) {
    const captured = captureLogger('hot-test')
    const calls: string[] = []
    const counted: HotRoute['handle'] = (req, res, params) => {
      calls.push(`${'originalUrl' in req ? 'express' : 'hot'} ${req.url}`)
      return handle(req, res, params)
    }
    const { app } = createHttpApp(
      {
        name: 'hot-test',
        logger: captured.logger,
        envelope: 'status',
        trustProxy: ['loopback'],
        hotRoutes: [{ path: '/fast', handle: counted }],
        ...overrides,
      },
      (app) => {
        app.get('/fast', async (req, res) => {
          res.json(await counted(req, res, {}))
        })
      },
    )
    return { app, lines: captured.lines, calls }
  }

  const sameEverywhere = (headers: Record<string, string>) => {
    const { date, 'x-request-id': _id, ...rest } = headers
    expect(date).toBeDefined()
    return rest
  }

  it('when a route has :param segments or takes a POST without body, then plain values take the hot route and everything else reaches express', async () => {
    const captured = captureLogger('hot-params')
    const calls: string[] = []
    const parts: HotRoute = {
      path: '/things/:id/parts',
      async handle(req, _res, params) {
        calls.push(`${'originalUrl' in req ? 'express' : 'hot'} ${req.method} ${params.id}`)
        return { id: params.id }
      },
    }
    const check: HotRoute = {
      path: '/check',
      method: 'POST',
      async handle(req) {
        calls.push(`${'originalUrl' in req ? 'express' : 'hot'} ${req.method} check`)
        return { ok: true }
      },
    }
    const { app } = createHttpApp(
      {
        name: 'hot-params',
        logger: captured.logger,
        envelope: 'status',
        trustProxy: ['loopback'],
        hotRoutes: [parts, check],
      },
      (app) => {
        app.get(parts.path, async (req, res) => {
          res.json(await parts.handle(req, res, req.params as Record<string, string>))
        })
        app.post(check.path, async (req, res) => {
          res.json(await check.handle(req, res, {}))
        })
      },
    )

    expect((await request(app).get('/things/42/parts').expect(200)).body).toEqual({ id: '42' })
    expect((await request(app).get('/things/a%2Fb/parts').expect(200)).body).toEqual({ id: 'a/b' })
    await request(app).get('/things/42/parts/').expect(200)
    await request(app).get('/things/42/parts?x=1').expect(200)
    await request(app).post('/check').expect(200)
    await request(app).post('/check').send({ a: 1 }).expect(200)
    await request(app).post('/things/42/parts').expect(404)

    expect(calls).toEqual([
      'hot GET 42',
      'express GET a/b',
      'express GET 42',
      'express GET 42',
      'hot POST check',
      'express POST check',
    ])
  })

  it('when a route takes a JSON body, then plain JSON bodies take the hot route and every answer, refusals included, is the express pipeline’s', async () => {
    const captured = captureLogger('hot-json')
    const calls: string[] = []
    const echo: HotRoute = {
      path: '/echo',
      method: 'POST',
      body: 'json',
      async handle(req, _res, _params, body) {
        calls.push(`${'originalUrl' in req ? 'express' : 'hot'} ${JSON.stringify(body)}`)
        if (Array.isArray(body) && body.length === 0) return new HotAnswer(204)
        return new HotAnswer(201, { got: body })
      },
    }
    const { app } = createHttpApp(
      {
        name: 'hot-json',
        logger: captured.logger,
        envelope: 'status',
        trustProxy: ['loopback'],
        bodyLimit: '1kb',
        hotRoutes: [echo],
      },
      (app) => {
        app.post(['/echo', '/echo/'], async (req, res) => {
          const answer = (await echo.handle(req, res, {}, req.body)) as HotAnswer
          res.status(answer.status)
          if (answer.body === undefined) res.end()
          else res.json(answer.body)
        })
      },
    )
    const post = (path: string, body: string | Buffer, type = 'application/json') =>
      request(app)
        .post(path)
        .set('Content-Type', type)
        .set('X-Request-Id', 'same')
        // The bytes as they are (superagent would serialise a Buffer as JSON).
        .serialize((b: unknown) => b as string)
        .send(body as string)
    const cases: Array<[string, string | Buffer, number, string?]> = [
      ['object', '{"a":"é"}', 201],
      ['array', '[1,2]', 201],
      ['nothing to answer', '[]', 204],
      ['byte order mark', Buffer.from('\ufeff{"a":1}'), 201],
      ['malformed', '{"a":', 400],
      ['strict mode', '"a"', 400],
      ['not UTF-8', Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), 400],
      ['NUL', '{"a":"\\u0000"}', 400],
      ['lone surrogate in a key', '{"\\udc00":1}', 400],
      ['over the limit (express answers both)', `{"a":"${'x'.repeat(1100)}"}`, 413],
      ['another type (express answers both)', '{"a":1}', 201, 'text/plain'],
    ]
    for (const [what, body, status, type] of cases) {
      const hot = await post('/echo', body, type)
      const viaExpress = await post('/echo/', body, type)
      expect([what, hot.status, hot.text]).toEqual([what, status, viaExpress.text])
      expect(sameEverywhere(hot.headers)).toEqual(sameEverywhere(viaExpress.headers))
    }
    expect(calls.filter((c) => c.startsWith('hot'))).toEqual([
      'hot {"a":"é"}',
      'hot [1,2]',
      'hot []',
      'hot {"a":1}',
    ])
    // Express ran the handler for the four through /echo/, and for both of the other type (the
    // bodies over the limit reached no handler on either path).
    expect(calls.filter((c) => c.startsWith('express'))).toEqual([
      'express {"a":"é"}',
      'express [1,2]',
      'express []',
      'express {"a":1}',
      'express undefined',
      'express undefined',
    ])
  })

  it('when the same JSON body comes again, then the handler gets the value it passed with before, frozen through; a refused or long body is read every time', async () => {
    const seen: unknown[] = []
    const route: HotRoute = {
      path: '/echo',
      method: 'POST',
      body: 'json',
      async handle(_req, _res, _params, body) {
        seen.push(body)
        return { kept: isKeptBody(body) }
      },
    }
    const { app } = createHttpApp(
      {
        name: 'hot-json-kept',
        logger: captureLogger('hot-json-kept').logger,
        envelope: 'status',
        trustProxy: ['loopback'],
        hotRoutes: [route],
      },
      () => {},
    )
    const post = (body: string) =>
      request(app).post('/echo').set('Content-Type', 'application/json').send(body)
    const body = '{"calls":[{"id":1,"params":{"names":["a","b"]}}]}'
    expect((await post(body)).body).toEqual({ kept: true })
    expect((await post(body)).body).toEqual({ kept: true })
    expect(seen[1]).toBe(seen[0])
    const value = seen[0] as { calls: Array<{ params: { names: string[] } }> }
    expect(Object.isFrozen(value.calls[0]!.params.names)).toBe(true)
    expect(() => value.calls[0]!.params.names.push('c')).toThrow(TypeError)
    // The same text refused twice (the input rule), and a long body parsed anew each time.
    expect((await post('{"a":"\\u0000"}')).status).toBe(400)
    expect((await post('{"a":"\\u0000"}')).status).toBe(400)
    const long = JSON.stringify({ a: 'x'.repeat(5000) })
    expect((await post(long)).body).toEqual({ kept: false })
    await post(long)
    expect(seen.at(-1)).not.toBe(seen.at(-2))
    expect(Object.isFrozen(seen.at(-1))).toBe(false)
    expect(seen).toHaveLength(4)
  })

  it('when more distinct bodies come than are kept, then the least recently used is let go', () => {
    const bodies = new JsonBodies(2)
    const parse = (text: string) => bodies.parse(Buffer.from(text))
    const a = parse('{"a":1}')
    const b = parse('{"b":1}')
    expect(parse('{"a":1}')).toBe(a)
    parse('{"c":1}')
    expect(parse('{"a":1}')).toBe(a)
    expect(parse('{"b":1}')).not.toBe(b)
    expect(parse('\ufeff{"a":1}')).toEqual({ a: 1 })
  })

  it('when the exact path is asked, then it answers with the headers and body express gives the same handler', async () => {
    const { app } = buildHotApp(async (_req, res) => {
      res.setHeader('Cache-Control', 'no-store')
      return { data: { ok: true, n: 1.5, s: 'é' } }
    })

    const hot = await request(app).get('/fast').set('X-Request-Id', 'hot-1').expect(200)
    const viaExpress = await request(app).get('/fast/').set('X-Request-Id', 'express-1').expect(200)

    expect(hot.text).toBe('{"data":{"ok":true,"n":1.5,"s":"é"}}')
    expect(hot.text).toBe(viaExpress.text)
    expect(hot.headers['x-request-id']).toBe('hot-1')
    expect(sameEverywhere(hot.headers)).toEqual(sameEverywhere(viaExpress.headers))
    expect(hot.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(hot.headers['x-content-type-options']).toBe('nosniff')
    expect(hot.headers['content-security-policy']).toContain("default-src 'self'")
  })

  it('when the handler sets a security header, its own, or one node writes itself, then each is on the answer once, as express gives it', async () => {
    const { app, calls } = buildHotApp(async (req, res) => {
      res.setHeader('content-security-policy', "default-src 'none'")
      res.setHeader('X-Extra', 'yes')
      res.setHeader('x-extra', 'again')
      if (req.headers['x-close']) res.setHeader('Connection', 'close')
      return { ok: true }
    })
    // fetch keeps connections alive, so the hot answers take the head made as text (supertest
    // asks to close, which node answers with a head of its own); it joins a repeated header's
    // values with ", ", so one value means one line.
    const server = await startTestServer(app)
    const headersOf = (res: Response) => Object.fromEntries(res.headers)
    try {
      const hot = await fetch(`${server.url}/fast`)
      const viaExpress = await fetch(`${server.url}/fast/`)
      expect(hot.headers.get('content-security-policy')).toBe("default-src 'none'")
      expect(hot.headers.get('x-extra')).toBe('again')
      expect(hot.headers.get('connection')).toBe('keep-alive')
      expect(await hot.text()).toBe(await viaExpress.text())
      expect(sameEverywhere(headersOf(hot))).toEqual(sameEverywhere(headersOf(viaExpress)))

      // A header node writes itself: node builds the head, and closes the connection as asked.
      const closing = await fetch(`${server.url}/fast`, { headers: { 'X-Close': '1' } })
      const closingViaExpress = await fetch(`${server.url}/fast/`, { headers: { 'X-Close': '1' } })
      expect(closing.headers.get('connection')).toBe('close')
      expect(await closing.text()).toBe('{"ok":true}')
      expect(sameEverywhere(headersOf(closing))).toEqual(sameEverywhere(headersOf(closingViaExpress)))
      await closingViaExpress.text()
      expect(calls).toEqual(['hot /fast', 'express /fast/', 'hot /fast', 'express /fast/'])
    } finally {
      await server.close()
    }
  })

  it('when the handler throws an ApiError, then the envelope, status and extra headers match express', async () => {
    const { app, lines } = buildHotApp(async (_req, res) => {
      res.setHeader('Cache-Control', 'no-store')
      throw new ApiError('rate_limit_exceeded', 'Rate limit exceeded', undefined, {
        headers: { 'Retry-After': '7' },
      })
    })

    const hot = await request(app).get('/fast').set('X-Request-Id', 'hot-2').expect(429)
    const viaExpress = await request(app).get('/fast/').expect(429)

    expect(hot.body).toEqual({ error: { code: 429, message: 'Rate limit exceeded' } })
    expect(hot.text).toBe(viaExpress.text)
    expect(sameEverywhere(hot.headers)).toEqual(sameEverywhere(viaExpress.headers))
    expect(hot.headers['retry-after']).toBe('7')
    expect(lines.find((l) => l.req_id === 'hot-2' && l.msg === 'request rejected')).toMatchObject({
      level: 'warn',
      code: 'rate_limit_exceeded',
    })
  })

  it('when the handler fails unexpectedly, then it is a 500 with nothing internal, logged at error with the cause', async () => {
    const { app, lines } = buildHotApp(async () => {
      throw new Error('connection to 10.0.0.7 refused')
    })

    const res = await request(app).get('/fast').set('X-Request-Id', 'hot-3').expect(500)

    expect(res.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    expect(res.text).not.toContain('10.0.0.7')
    expect(lines.find((l) => l.req_id === 'hot-3' && l.msg === 'request failed')).toMatchObject({
      level: 'error',
      err: expect.objectContaining({ message: 'connection to 10.0.0.7 refused' }),
    })
    const line = await completionLine(lines, 'hot-3')
    expect(line).toMatchObject({ level: 'error', res: { statusCode: 500 } })
  })

  it('when a hot request completes, then its log line has the trusted client address, id, url and status', async () => {
    const { app, lines } = buildHotApp(async () => ({ ok: true }))

    await request(app)
      .get('/fast')
      .set('X-Request-Id', 'hot-4')
      .set('X-Forwarded-For', '198.51.100.66, 203.0.113.5')
      .set('Authorization', 'Bearer sk-hot-secret')
      .expect(200)

    const line = await completionLine(lines, 'hot-4')
    expect(line).toMatchObject({
      level: 'info',
      ip: '203.0.113.5',
      req: { method: 'GET', url: '/fast', headers: { authorization: '[redacted]' } },
      res: { statusCode: 200 },
    })
    expect(JSON.stringify(lines)).not.toContain('sk-hot-secret')
  })

  it('when hot requests are answered, then metrics count them under the route template like express', async () => {
    const { app } = buildHotApp(async () => ({ ok: true }))
    await request(app).get('/fast').expect(200)
    await request(app).get('/fast').expect(200)
    await request(app).get('/fast/').expect(200)

    const res = { text: await metricsText(app) }

    expect(res.text).toMatch(/http_requests_total\{[^}]*route="\/fast"[^}]*status="200"[^}]*\} 3/)
  })

  it('when hot requests are counted many times, and the registry is reset, then counter and histogram stay exact', async () => {
    const { app, metrics } = createHttpApp(
      {
        name: 'http-test',
        logger: captureLogger('http-test').logger,
        envelope: 'code',
        trustProxy: ['loopback'],
        hotRoutes: [{ path: '/fast', handle: async () => ({ ok: true }) }],
      },
      () => {},
    )
    const series = (text: string, name: string) =>
      text.split('\n').filter((l) => l.startsWith(`${name}{`) && l.includes('route="/fast"'))
    for (let i = 0; i < 5; i++) await request(app).get('/fast').expect(200)
    let text = await metricsText(app)
    expect(series(text, 'http_requests_total')).toEqual([expect.stringMatching(/status="200".*\} 5$/)])
    expect(series(text, 'http_request_duration_seconds_count')).toEqual([expect.stringMatching(/\} 5$/)])
    expect(series(text, 'http_request_duration_seconds_bucket')).toContainEqual(
      expect.stringMatching(/le="10".*\} 5$/),
    )
    const sum = Number(series(text, 'http_request_duration_seconds_sum')[0]!.split(' ')[1])
    expect(sum).toBeGreaterThan(0)

    metrics.resetMetrics()
    for (let i = 0; i < 2; i++) await request(app).get('/fast').expect(200)
    text = await metricsText(app)
    expect(series(text, 'http_requests_total')).toEqual([expect.stringMatching(/\} 2$/)])
    expect(series(text, 'http_request_duration_seconds_count')).toEqual([expect.stringMatching(/\} 2$/)])
    expect(series(text, 'http_request_duration_seconds_bucket')).toContainEqual(
      expect.stringMatching(/le="\+Inf".*\} 2$/),
    )
  })

  it.each([
    ['HEAD', (app: Express) => request(app).head('/fast')],
    ['a query string', (app: Express) => request(app).get('/fast?x=1')],
    ['a trailing slash', (app: Express) => request(app).get('/fast/')],
    ['other casing', (app: Express) => request(app).get('/FAST')],
    ['a body', (app: Express) => request(app).get('/fast').set('Content-Type', 'application/json').send('{')],
  ])('when the request has %s, then express answers it', async (_what, send) => {
    const { app, calls } = buildHotApp(async () => ({ ok: true }))

    const res = await send(app)

    expect(res.headers['x-request-id']).toBeDefined()
    if (res.status === 400) {
      // express.json refused the malformed body before any handler ran
      expect(res.body).toEqual({ error: { code: 400, message: 'request body is not valid JSON' } })
      expect(calls).toEqual([])
    } else {
      expect(res.status).toBe(200)
      expect(calls).toEqual([expect.stringMatching(/^express /)])
    }
  })

  it('when the exact path is asked, then the hot route, not express, runs the handler', async () => {
    const { app, calls } = buildHotApp(async () => ({ ok: true }))

    await request(app).get('/fast').expect(200)

    expect(calls).toEqual(['hot /fast'])
  })

  it('when a hot handler resolves nothing, then it is a 500 envelope and the process stays up', async () => {
    const { app, lines } = buildHotApp(async () => undefined)

    const res = await request(app).get('/fast').set('X-Request-Id', 'hot-5').expect(500)

    expect(res.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    expect(lines.find((l) => l.req_id === 'hot-5' && l.msg === 'request failed')).toBeDefined()
  })

  it('when a hot error carries a header value node refuses, then it is still a 500 envelope with the security headers', async () => {
    const { app, lines } = buildHotApp(async () => {
      throw new ApiError('conflict', 'nope', undefined, { headers: { 'X-Bad': 'line\nbreak' } })
    })

    const res = await request(app).get('/fast').set('X-Request-Id', 'hot-6').expect(500)

    expect(res.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    expect(res.headers['x-request-id']).toBe('hot-6')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(lines.find((l) => l.req_id === 'hot-6' && l.msg === 'hot route failed')).toBeDefined()
  })

  it('when the handler sets a header twice, then the last value is sent, once, as express does', async () => {
    const { app } = buildHotApp(async (_req, res) => {
      res.setHeader('Cache-Control', 'no-cache')
      res.setHeader('cache-control', 'no-store')
      return { ok: true }
    })

    const hot = await request(app).get('/fast').expect(200)
    const viaExpress = await request(app).get('/fast/').expect(200)

    expect(hot.headers['cache-control']).toBe('no-store')
    expect(sameEverywhere(hot.headers)).toEqual(sameEverywhere(viaExpress.headers))
  })

  it('when the handler overrides a security header or sets Content-Length, then each header is sent once', async () => {
    const { app } = buildHotApp(async (_req, res) => {
      res.setHeader('x-frame-options', 'DENY')
      res.setHeader('Content-Length', '1')
      return { ok: true }
    })
    const server = await startTestServer(app)
    try {
      const res = await fetch(`${server.url}/fast`)

      // fetch joins repeated headers with ", ": one value each means one header each.
      expect(res.headers.get('x-frame-options')).toBe('DENY')
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8')
      expect(res.headers.get('content-length')).toBe(String('{"ok":true}'.length))
      expect(await res.json()).toEqual({ ok: true })
    } finally {
      await server.close()
    }
  })

  it('when the handler sets a header value node refuses, then it is the 500 envelope express gives', async () => {
    const { app, lines } = buildHotApp(async (_req, res) => {
      res.setHeader('X-Bad', 'line\nbreak')
      return { ok: true }
    })

    const hot = await request(app).get('/fast').set('X-Request-Id', 'hot-7').expect(500)
    const viaExpress = await request(app).get('/fast/').expect(500)

    expect(hot.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
    expect(hot.text).toBe(viaExpress.text)
    expect(sameEverywhere(hot.headers)).toEqual(sameEverywhere(viaExpress.headers))
    expect(hot.headers['x-bad']).toBeUndefined()
    expect(lines.find((l) => l.req_id === 'hot-7' && l.msg === 'request failed')).toBeDefined()
  })

  it('when a CSP directive is computed per request, then the app refuses to start', () => {
    expect(() =>
      createHttpApp(
        {
          name: 'hot-test',
          logger: captureLogger('x').logger,
          envelope: 'status',
          trustProxy: 0,
          helmet: { contentSecurityPolicy: { directives: { 'script-src': [() => "'nonce-abc'"] } } },
        },
        () => {},
      ),
    ).toThrow(/computed per request/)
  })
})

describe('answers asked before express (the request listener)', () => {
  function appWithAnswers() {
    const asked: string[] = []
    const { app } = createHttpApp(
      { name: 'first-answers', logger: silentLogger(), envelope: 'status', trustProxy: ['loopback'] },
      (app) => {
        app.get('/first', (_req, res) => void res.json({ by: 'express' }))
        app.get('/second', (_req, res) => void res.json({ by: 'express' }))
      },
    )
    const answerAs = (path: string, by: string) => (req: IncomingMessage, res: ServerResponse) => {
      asked.push(`${by} ${req.url}`)
      if (req.url !== path) return false
      res.setHeader('Content-Type', 'application/json; charset=utf-8')
      res.end(JSON.stringify({ by }))
      return true
    }
    answerBeforeExpress(app, answerAs('/first', 'one'))
    answerBeforeExpress(app, answerAs('/second', 'two'))
    return { app, asked }
  }

  it('when answers are registered, then they are asked in that order, the first to take a request answers it, and what none takes goes to express', async () => {
    const { app, asked } = appWithAnswers()
    expect((await request(app).get('/first')).body).toEqual({ by: 'one' })
    expect((await request(app).get('/second')).body).toEqual({ by: 'two' })
    expect((await request(app).get('/healthz')).body).toEqual({ status: 'ok' })
    expect(asked).toEqual(['one /first', 'one /second', 'two /second', 'one /healthz', 'two /healthz'])
  })

  it('when the app is served by express alone (http.createServer(app)), then no answer is asked and express answers every request', async () => {
    const { app, asked } = appWithAnswers()
    const server = createServer(app).listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
      expect(await (await fetch(`${url}/first`)).json()).toEqual({ by: 'express' })
      expect(asked).toEqual([])
    } finally {
      server.close()
    }
  })

  it('when serve and startTestServer serve the app, then they use the same listener, answers registered later included', async () => {
    const { app, asked } = appWithAnswers()
    expect(requestListener(app)).toBe(requestListener(app))
    const running = await startTestServer(app)
    try {
      answerBeforeExpress(app, (_req, res) => {
        res.end('late')
        return true
      })
      expect(await (await fetch(`${running.url}/first`)).json()).toEqual({ by: 'one' })
      expect(await (await fetch(`${running.url}/healthz`)).text()).toBe('late')
      expect(asked).toEqual(['one /first', 'one /healthz', 'two /healthz'])
    } finally {
      await running.close()
    }
  })

  it('when a hook is registered with onServer, then every server core makes for the app runs it before it listens', async () => {
    const { app } = appWithAnswers()
    const seen: boolean[] = []
    onServer(app, (server) => seen.push(server.listening))
    const running = await startTestServer(app)
    await running.close()
    expect(seen).toEqual([false])
  })
})
