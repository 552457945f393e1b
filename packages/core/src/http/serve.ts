import { randomUUID } from 'node:crypto'
import net from 'node:net'
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http'
import type { Express } from 'express'
import { ApiError, type EnvelopeStyle, renderEnvelope } from '../errors.ts'
import type { Logger } from '../log.ts'
import {
  ENVELOPE,
  JSON_CONTENT_TYPE,
  markDraining,
  metricsRegistryOf,
  requestListener,
  serverFor,
} from './app-state.ts'

// ---------------------------------------------------------------------------------------------
// Serving with graceful shutdown.
// ---------------------------------------------------------------------------------------------

export interface ServeOptions {
  port: number
  host?: string
  logger: Logger
  /** How long in-flight requests may take to finish after SIGTERM before they are cut. */
  shutdownTimeoutMs?: number
  /**
   * After SIGTERM, how long to keep accepting connections while /readyz says 503, so that a
   * load balancer polling readiness stops sending before the port closes (0: close at once, as
   * behind Kubernetes, whose preStop pause does this job).
   */
  shutdownDelayMs?: number
  /**
   * Serve the app's metrics (metricsRegistryOf) for the scraper on this port of their own: GET
   * /metrics, nothing else. Undefined: no metrics listener; 0: any free port.
   */
  metricsPort?: number | undefined
  /** Interface of the metrics listener (default: `host`). */
  metricsHost?: string | undefined
  /** Closed in order after the server stops: database pools, Redis, … */
  onShutdown?: Array<() => Promise<unknown>>
  /** Exit the process after shutdown (default true; tests pass false). */
  exitProcess?: boolean
  /** Install SIGTERM/SIGINT handlers (default true). */
  handleSignals?: boolean
}

export interface Serving {
  server: Server
  port: number
  url: string
  /** The metrics listener's URL (`…/metrics`), when metricsPort was given. */
  metricsUrl?: string
  /** Readiness 503, stop accepting, let in-flight requests finish (bounded), run onShutdown hooks. */
  shutdown(reason?: string): Promise<void>
}

/**
 * Listens, and shuts down without resetting anyone's connection. On SIGTERM (or `shutdown()`):
 * 1. /readyz answers 503 and every response carries `Connection: close`, so each kept-alive
 *    connection ends after its next answer instead of being reused;
 * 2. after `shutdownDelayMs`, the port stops accepting;
 * 3. connections that are idle are not closed under their clients' feet (a request already on
 *    its way would meet a reset): each closes after its next answer, or when its keep-alive
 *    timeout passes, which clients are told in `Keep-Alive: timeout=…` and retire before;
 * 4. once every connection is gone, or `shutdownTimeoutMs` has passed (then the rest are cut),
 *    the onShutdown hooks close pools and clients.
 */
export async function serve(app: Express, options: ServeOptions): Promise<Serving> {
  let draining = false
  const answer = requestListener(app)
  const server = serverFor(app, (req, res) => {
    // The connection's current request and response, for a close that lingers (below) and for
    // draining, which gives answers not yet begun `Connection: close`.
    const socket = req.socket as Tracked
    socket[CURRENT_REQUEST] = req
    socket[CURRENT_RESPONSE] = res
    if (draining) res.setHeader('Connection', 'close')
    answer(req, res)
  })
  server.listen(options.port, options.host ?? '0.0.0.0')
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : options.port
  const host =
    options.host && options.host !== '0.0.0.0' && options.host !== '::' ? options.host : '127.0.0.1'
  const log = options.logger
  const metricsServer = options.metricsPort === undefined ? undefined : await serveMetrics(app, options)

  let shuttingDown: Promise<void> | undefined
  // Connections, so that answers not yet begun when draining starts get `Connection: close`
  // too. Tracked per connection rather than per request, which keep-alive makes far fewer.
  const connections = new Set<net.Socket>()
  server.on('connection', (socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
    lingerUnreadBodies(socket)
  })
  server.on('clientError', clientErrorAnswer(app, log))
  // Node answers an `Expect` other than 100-continue itself with a bare 417, which RFC 9110
  // §10.1.1 allows but does not require: the request is served as if the expectation were not there.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    server.emit('request', req, res),
  )

  const shutdown = (reason = 'shutdown'): Promise<void> => {
    shuttingDown ??= (async () => {
      draining = true
      markDraining(app)
      for (const socket of connections) {
        const res = (socket as Tracked)[CURRENT_RESPONSE]
        if (res && !res.headersSent) res.setHeader('Connection', 'close')
      }
      const delayMs = options.shutdownDelayMs ?? 0
      log.info({ reason, delayMs }, 'shutting down: readiness 503, finishing in-flight requests')
      if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs))
      // net.Server's close, not http.Server's: that one also closes idle keep-alive connections
      // at once, racing requests their clients are sending on them (ECONNRESET).
      const closed = new Promise<void>((resolve) => net.Server.prototype.close.call(server, () => resolve()))
      const timeoutMs = options.shutdownTimeoutMs ?? 10_000
      let timer: NodeJS.Timeout | undefined
      const timedOut = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs)
      })
      if ((await Promise.race([closed, timedOut])) === 'timeout') {
        log.warn({ timeoutMs }, 'in-flight requests did not finish in time; closing their connections')
        server.closeAllConnections()
        await closed
      }
      clearTimeout(timer)
      for (const hook of options.onShutdown ?? []) {
        try {
          await hook()
        } catch (err) {
          log.error({ err }, 'shutdown hook failed')
        }
      }
      if (metricsServer) {
        metricsServer.server.closeAllConnections()
        await new Promise((resolve) => metricsServer.server.close(resolve))
      }
      log.info('stopped')
    })()
    return shuttingDown
  }

  if (options.handleSignals ?? true) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        void shutdown(signal).then(() => {
          if (options.exitProcess ?? true) {
            log.flush?.()
            process.exit(0)
          }
        })
      })
    }
  }

  log.info(
    {
      port,
      url: `http://${host}:${port}`,
      metricsUrl: metricsServer?.url,
      node: process.version,
      nodeFlags: process.execArgv,
    },
    'listening',
  )
  return { server, port, url: `http://${host}:${port}`, metricsUrl: metricsServer?.url, shutdown }
}

/** The scraper's own listener: GET /metrics from the app's registry, 404 for anything else. */
async function serveMetrics(app: Express, options: ServeOptions): Promise<{ server: Server; url: string }> {
  const registry = metricsRegistryOf(app)
  if (!registry) throw new Error('serve: metricsPort given, but the app was not made by createHttpApp')
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0]
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n')
      return
    }
    registry.metrics().then(
      (text) =>
        res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' }).end(text),
      (err: unknown) => {
        options.logger.error({ err }, 'metrics failed')
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics failed\n')
      },
    )
  })
  const host = options.metricsHost ?? options.host ?? '0.0.0.0'
  server.listen(options.metricsPort, host)
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const port = (server.address() as net.AddressInfo).port
  const shown = host !== '0.0.0.0' && host !== '::' ? host : '127.0.0.1'
  return { server, url: `http://${shown}:${port}/metrics` }
}

/**
 * What node's HTTP parser refuses before any request exists (a request line or headers over
 * its limit, a byte it does not accept, a request that took too long to arrive), answered in the
 * service's envelope rather than node's bare status line, and the connection closed.
 */
function clientErrorAnswer(
  app: object,
  logger?: Logger,
): (err: NodeJS.ErrnoException, socket: net.Socket) => void {
  const style = (app as { [ENVELOPE]?: EnvelopeStyle })[ENVELOPE] ?? 'code'
  return (err, socket) => {
    // Node's parser, still attached, reports every later chunk as another error: the answer went.
    if ((socket as net.Socket & { [ANSWERED]?: true })[ANSWERED]) return
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    ;(socket as net.Socket & { [ANSWERED]?: true })[ANSWERED] = true
    const refusal =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('header_fields_too_large', 'request line or headers are too large')
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new ApiError('request_timeout', 'the request did not arrive in time')
          : new ApiError('bad_request', 'malformed HTTP request')
    // No request exists, so no X-Request-Id of the client's was read: the answer gets one of its
    // own, as every other answer does, and the log line the same, to find it by.
    const id = randomUUID()
    logger?.warn({ req_id: id, code: refusal.code, parserError: err.code }, 'request refused before parsing')
    const body = JSON.stringify(renderEnvelope(style, refusal, id))
    socket.end(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\n` +
        `Content-Type: ${JSON_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${id}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n${body}`,
    )
    lingerClose(socket)
  }
}

const ANSWERED = Symbol('quartet.clientErrorAnswered')
const CURRENT_REQUEST = Symbol('quartet.currentRequest')
const CURRENT_RESPONSE = Symbol('quartet.currentResponse')
type Tracked = net.Socket & { [CURRENT_REQUEST]?: IncomingMessage; [CURRENT_RESPONSE]?: ServerResponse }

/**
 * A connection that closes after an answer (`Connection: close`) while its request's body is
 * still coming in (refused before it was read: an unknown route, a bad query, missing
 * credentials on an upload) closes with a lingering close rather than node's destroy as soon as
 * the answer is written, which made the kernel answer the client's next bytes with a reset. A
 * route may install its own (pickup-share's uploads do).
 */
function lingerUnreadBodies(socket: net.Socket): void {
  const s = socket as net.Socket & { destroySoon?: () => void; [CURRENT_REQUEST]?: IncomingMessage }
  const destroySoon = s.destroySoon?.bind(socket)
  if (!destroySoon) return
  s.destroySoon = () => {
    const req = s[CURRENT_REQUEST]
    if (!req || req.complete || socket.destroyed) return destroySoon()
    lingerClose(socket, req)
  }
}
/** How long, and how many bytes, a refused client may go on sending before its connection is cut. */
const LINGER_MS = 5000
const LINGER_BYTES = 16 * 1024 * 1024

/**
 * A lingering close, as nginx does it: our side is shut for writing (the answer, then FIN), and
 * what the client still sends of a request refused half-way (a request line of 300 kB) is read
 * and dropped until it stops, within bounds. Closed at once, the socket would answer those bytes
 * with a reset, and a client that had not read the answer yet would lose it.
 */
function lingerClose(socket: net.Socket, req?: IncomingMessage): void {
  // What still arrives is read through the request when there is one (node's parser owns the
  // socket's data), else straight from the socket.
  const source: NodeJS.ReadableStream = req ?? socket
  if (!req) socket.removeAllListeners('data')
  let dropped = 0
  const close = () => {
    clearTimeout(timer)
    socket.destroy()
  }
  const timer = setTimeout(close, LINGER_MS)
  timer.unref()
  source.on('data', (chunk: Buffer) => {
    dropped += chunk.length
    if (dropped > LINGER_BYTES) close()
  })
  source.once('end', close)
  socket.once('end', close)
  socket.once('close', () => clearTimeout(timer))
  socket.end()
  if (req) req.unpipe()
  source.resume()
}
