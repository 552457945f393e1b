import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import net from 'node:net'
import {
  createServer,
  IncomingMessage,
  STATUS_CODES,
  type Server,
  type ServerResponse,
  validateHeaderName,
  validateHeaderValue,
} from 'node:http'
import express, { type Express, type Request, type RequestHandler } from 'express'
import helmet from 'helmet'
import client from 'prom-client'
import proxyaddr from 'proxy-addr'
import {
  ApiError,
  type EnvelopeStyle,
  errorAnswer,
  errorMiddleware,
  notFoundMiddleware,
  renderEnvelope,
  toApiError,
} from './errors.ts'
import { httpLogger, type Logger, trackRequest } from './log.ts'
import { isNodeOwned, sendLines } from './prebuilt-head.ts'
import {
  assertJsonDepth,
  assertWellFormedBody,
  verifyJsonBody,
  verifyUtf8Body,
  wellFormedInput,
} from './validate.ts'

/**
 * A named dependency probe for `/readyz`; it resolves when the dependency answers. A check the
 * service can serve without (Redis, where limits fall back to each process) is `optional`: it is
 * reported, and never takes the service out of the load balancer. `progress()` is called as the
 * check begins; the function it returns says, once the check is past its deadline, whether the
 * dependency has since answered other work sent after that moment. Then the check is `slow`, and
 * passes: a busy server keeps answering, a dead or frozen one answers nothing sent after it stopped
 * (db.ts databaseReadiness), so one slow ping under load does not take a replica out.
 */
export type ReadinessCheck =
  | (() => Promise<unknown>)
  | { check: () => Promise<unknown>; optional?: true; progress?: () => () => boolean }

export interface HttpAppOptions {
  /** Service name, used in metrics and logs. */
  name: string
  logger: Logger
  envelope: EnvelopeStyle
  /** Express `trust proxy`: a hop count or CIDR list (config's zTrustProxy). */
  trustProxy: number | string[]
  /** JSON body limit, e.g. "1mb". */
  bodyLimit?: string
  /** What the service needs to serve (see ReadinessCheck); only these go in /readyz. */
  readiness?: Record<string, ReadinessCheck>
  /**
   * Milliseconds a readiness check may take before it counts as failed (default 500: /readyz
   * answers well within a second), unless the dependency answered other work sent after the check
   * began (ReadinessCheck's `progress`): then it is `slow`, and passes.
   */
  readinessTimeoutMs?: number
  /** Helmet options; pages with scripts/styles pass their own Content-Security-Policy. */
  helmet?: Parameters<typeof helmet>[0]
  /** JSON GET routes answered before express runs (see HotRoute). */
  hotRoutes?: HotRoute[]
  /**
   * `/metrics` is for the scraper, not the public port: served by `serve` on a port of its own
   * (METRICS_PORT), and on the public port only to `Authorization: Bearer <metricsToken>` when a
   * token is configured (METRICS_TOKEN); otherwise the public port answers 404 there.
   */
  metricsToken?: string | undefined
}

/**
 * A JSON GET route served before express: express gives every request its own prototypes and
 * walks its router, which costs a small route several times its own work. A hot route gets the
 * same X-Request-Id, security headers, completion log line, metrics (under `path` as the route
 * template) and error envelope as the express pipeline. Only a request of exactly `path`, with
 * no query string, and no body (or, for `body: 'json'`, a plain JSON body), takes it; everything
 * else (HEAD, a trailing slash, other casing, a query, another body) goes on to express, so the
 * service must also mount the same handler there.
 */
export interface HotRoute {
  /**
   * The exact path, or a template with `:name` segments (`/things/:id/parts`): a segment value
   * is taken only when it is plain (letters, digits, `_`, `-`); anything else, percent-encoded
   * text included, goes to express with the rest. The template is the metrics route label.
   */
  path: string
  /**
   * GET (the default), or POST for a call that needs no body: only a POST without a body
   * (no Content-Length beyond 0, no Transfer-Encoding) takes the hot route.
   */
  method?: 'GET' | 'POST'
  /**
   * `'json'`: a POST whose body is JSON, read and checked here exactly as the express pipeline
   * checks it (express.json with its limit and UTF-8 verification, then core's input rule,
   * wellFormedInput): `Content-Type: application/json` (no parameter but `charset=utf-8`), a
   * Content-Length of 1 byte up to the body limit, no Transfer-Encoding, Content-Encoding or
   * Expect. Any other request at the path (chunked, compressed, another type, over the limit:
   * express gives those their answers, the 413 included) goes on to express.
   */
  body?: 'json'
  /**
   * Resolves to the JSON body of the 200, or to a HotAnswer (another status, or no body);
   * throw an ApiError (or anything) for the envelope.
   * Response headers go to `headers` (express's response, when the route is also mounted
   * there): a hot route writes every header of its answer in one writeHead. Content-Type
   * (JSON, UTF-8) and Content-Length are the route's own. `params` holds the template's
   * segments (express's `req.params` when express serves it); `body` the parsed JSON body of a
   * `body: 'json'` route (express's `req.body`). A handler reads its body and never changes it:
   * a short body is frozen through and handed to every request with the same text (JsonBodies).
   */
  handle(
    req: IncomingMessage,
    headers: HeaderSink,
    params: Record<string, string>,
    body?: unknown,
  ): Promise<unknown>
  /**
   * The answer to a body the pipeline refused (malformed JSON, not UTF-8, a string the input
   * rule refuses): it gets the error express's error handlers would get (body-parser's, with its
   * `type`, or the ApiError). Without it, the service's envelope (errorMiddleware's answer).
   */
  bodyError?(err: unknown, req: IncomingMessage, headers: HeaderSink): HotAnswer
}

/**
 * A hot route's answer other than a 200 with a JSON body: a status, and a JSON body or none, or
 * the JSON as already serialised (`text`: a string, or its UTF-8 bytes; it then wins over `body`).
 */
export class HotAnswer {
  constructor(
    readonly status: number,
    readonly body?: unknown,
    readonly text?: string | Buffer,
    /**
     * A JSON media type other than `application/json` (GraphQL's
     * `application/graphql-response+json`); the answer is UTF-8 JSON either way.
     */
    readonly jsonType?: `application/${string}json`,
  ) {}
}

/** Where a handler sets response headers; a ServerResponse (or express's response) is one. */
export interface HeaderSink {
  setHeader(name: string, value: string | number): unknown
}

/** The lines every hot answer starts with: the request id's (its value per request), then the security headers. */
interface FirstLines {
  names: readonly string[]
  values: readonly string[]
  /** Lower-case name → its index in `names`. */
  at: ReadonlyMap<string, number>
  /** The security headers' lines as head text, `Name: value\r\n` each. */
  securityText: string
}

function firstLines(securityHeaders: ReadonlyArray<readonly [string, string]>): FirstLines {
  const names = ['X-Request-Id', ...securityHeaders.map(([name]) => name)]
  return {
    names,
    values: ['', ...securityHeaders.map(([, value]) => value)],
    at: new Map(names.map((name, i) => [name.toLowerCase(), i])),
    securityText: securityHeaders.map(([name, value]) => `${name}: ${value}\r\n`).join(''),
  }
}

/**
 * A hot route's headers until its answer is written, starting with the request id and the
 * security headers: a name set again replaces its value whatever the casing (as on a
 * ServerResponse, so a handler may override a security header as under express), and each
 * value is checked when set, so a bad one fails the handler like express's setHeader would.
 * Written with the answer as head text that needs no second check (prebuilt-head.ts,
 * `sendLines`): writeHead would check every line again and build the head anew, which was a
 * tenth of what a hot answer allocated. The security lines are text made once at start; only
 * an answer that sets one of them, or a header node writes itself, builds the head line by line.
 */
class HeaderList implements HeaderSink {
  id = ''
  /** The first lines' values, copied only when the answer sets one of the security headers. */
  private firstValues: string[] | undefined
  /** The lines the answer adds, in order: flat [name, value, name, value, …]. */
  private readonly added: string[] = []
  private readonly addedLower: string[] = []

  constructor(private readonly first: FirstLines) {}

  setHeader(name: string, value: string | number): this {
    validateHeaderName(name)
    const text = String(value)
    validateHeaderValue(name, text)
    this.put(name.toLowerCase(), name, text)
    return this
  }

  /** For names and values the pipeline itself makes (checked once at start, or by node). */
  put(lowerName: string, name: string, value: string): void {
    const at = this.first.at.get(lowerName)
    if (at === 0) this.id = value
    else if (at !== undefined) (this.firstValues ??= this.first.values.slice())[at] = value
    else {
      const i = this.addedLower.indexOf(lowerName)
      if (i >= 0) this.added[2 * i + 1] = value
      else {
        this.addedLower.push(lowerName)
        this.added.push(name, value)
      }
    }
  }

  /** Every line, writeHead's array form. */
  flat(): string[] {
    const { names, values } = this.first
    const out: string[] = []
    for (let i = 0; i < names.length; i++)
      out.push(names[i]!, i === 0 ? this.id : (this.firstValues ?? values)[i]!)
    out.push(...this.added)
    return out
  }

  /** Every line as head text; undefined when one is a header node writes itself. */
  text(): string | undefined {
    for (const lower of this.addedLower) if (isNodeOwned(lower)) return undefined
    let text = 'X-Request-Id: ' + this.id + '\r\n'
    if (this.firstValues === undefined) text += this.first.securityText
    else
      for (let i = 1; i < this.first.names.length; i++)
        text += this.first.names[i] + ': ' + this.firstValues[i] + '\r\n'
    for (let i = 0; i < this.added.length; i += 2) text += this.added[i] + ': ' + this.added[i + 1] + '\r\n'
    return text
  }
}

export interface HttpApp {
  app: Express
  metrics: client.Registry
  /**
   * Counts one answer in the pipeline's request metrics, for answers given outside express (a
   * fast path installed with answerBeforeExpress). `route` is the route template.
   */
  observe(method: string, route: string, status: number, seconds: number): void
}

/**
 * The skeleton every service shares: request id + logging, helmet, metrics, `trust proxy`,
 * JSON body with a limit, health endpoints, then the service's routes (`mount`), then a JSON 404
 * and the error middleware in the service's envelope.
 */
export function createHttpApp(options: HttpAppOptions, mount: (app: Express) => void): HttpApp {
  const app = express()
  app.disable('x-powered-by')
  // No automatic ETag (a SHA-1 of every body): API answers are dynamic or set their own validators.
  app.set('etag', false)
  app.set('trust proxy', options.trustProxy)
  app.set('json spaces', 0)

  const metrics = new client.Registry()
  metrics.setDefaultLabels({ service: options.name })
  client.collectDefaultMetrics({ register: metrics })
  const requests = new client.Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [metrics],
  })
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [metrics],
  })

  // Each (method, route template, status) keeps prom-client's child objects (labels()), so the
  // labels are checked once per series rather than looked up anew per answer; route templates
  // keep the set small.
  const series = new Map<string, Series>()
  const observe = (method: string, route: string, status: number, seconds: number) => {
    const key = `${method} ${status} ${route}`
    let found = series.get(key)
    if (!found) {
      const labels = { method, route, status: String(status) }
      found = { requests: requests.labels(labels), duration: duration.labels(labels) }
      series.set(key, found)
    }
    found.requests.inc()
    found.duration.observe(seconds)
  }

  app.use(httpLogger(options.logger))
  app.use((req, res, next) => {
    const started = performance.now()
    res.on('finish', () => {
      observe(req.method, routeTemplate(req), res.statusCode, (performance.now() - started) / 1000)
    })
    next()
  })
  const securityHeaders = staticSecurityHeaders(options.helmet)
  app.use((_req, res, next) => {
    for (const [name, value] of securityHeaders) res.setHeader(name, value)
    next()
  })
  // An HTTP/1.1 request must name its Host (RFC 9112 §3.2). Node's own check answered 400 with
  // no body at all; serve() turns it off, so the answer is in the envelope.
  app.use((req, _res, next) => {
    if (missingHost(req)) throw new ApiError('bad_request', 'an HTTP/1.1 request needs a Host header')
    next()
  })

  app.get('/healthz', (_req, res) => {
    res.set('Cache-Control', 'no-store').json({ status: 'ok' })
  })
  app.get('/readyz', readinessHandler(options.readiness ?? {}, options.readinessTimeoutMs ?? 500))
  ;(app as Express & { [METRICS]?: client.Registry })[METRICS] = metrics
  ;(app as Express & { [ENVELOPE]?: EnvelopeStyle })[ENVELOPE] = options.envelope
  const metricsToken = options.metricsToken
  if (metricsToken)
    app.get('/metrics', async (req, res) => {
      if (!bearerMatches(req.headers.authorization, metricsToken)) {
        res.set('WWW-Authenticate', 'Bearer realm="metrics"')
        throw new ApiError('unauthorized', 'metrics need the bearer token of METRICS_TOKEN')
      }
      res
        .set('Content-Type', metrics.contentType)
        .set('Cache-Control', 'no-store')
        .send(await metrics.metrics())
    })

  app.use(express.json({ limit: options.bodyLimit ?? '1mb', verify: verifyJsonBody }))
  app.use(wellFormedInput())

  mount(app)

  app.use(notFoundMiddleware())
  app.use(errorMiddleware({ style: options.envelope }))

  if (options.hotRoutes?.length) {
    const exact = new Map<string, HotRoute>()
    const templated: Array<{ route: HotRoute; pattern: RegExp; names: string[] }> = []
    for (const route of options.hotRoutes) {
      const key = `${route.method ?? 'GET'} ${route.path}`
      if (!route.path.includes('/:')) {
        exact.set(key, route)
        continue
      }
      const names: string[] = []
      const source = route.path
        .split('/')
        .map((segment) => {
          if (!segment.startsWith(':')) return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
          names.push(segment.slice(1))
          return '([A-Za-z0-9_-]+)'
        })
        .join('/')
      templated.push({ route, pattern: new RegExp(`^${route.method ?? 'GET'} ${source}$`), names })
    }
    const NO_PARAMS: Record<string, string> = Object.freeze({}) as Record<string, string>
    const match = (method: string, url: string): [HotRoute, Record<string, string>] | undefined => {
      const key = `${method} ${url}`
      const route = exact.get(key)
      if (route) return [route, NO_PARAMS]
      for (const t of templated) {
        const m = t.pattern.exec(key)
        if (m) return [t.route, Object.fromEntries(t.names.map((name, i) => [name, m[i + 1]!]))]
      }
      return undefined
    }
    const trust = app.get('trust proxy fn') as Parameters<typeof proxyaddr>[1]
    // The express pipeline's order: request id (its value per request), the security headers.
    const first = firstLines(securityHeaders)
    const bodyLimit = parseByteLimit(options.bodyLimit ?? '1mb')
    const jsonBodies = new JsonBodies()
    const serveHot = async (
      route: HotRoute,
      params: Record<string, string>,
      req: IncomingMessage,
      res: ServerResponse,
    ) => {
      const started = performance.now()
      const id = trackRequest(options.logger, req, res, () => proxyaddr(req, trust))
      // Counted when the answer is flushed, as the express pipeline counts: not when cut off.
      res.once('finish', () => {
        observe(route.method ?? 'GET', route.path, res.statusCode, (performance.now() - started) / 1000)
      })
      const headers = new HeaderList(first)
      headers.id = id
      let status = 200
      let body: string | Buffer | undefined
      let contentType = JSON_CONTENT_TYPE
      try {
        let payload: unknown
        let parsed: unknown
        let refused: unknown
        if (route.body === 'json') {
          try {
            parsed = jsonBodies.parse(await readBody(req))
          } catch (err) {
            refused = err
          }
        }
        if (refused !== undefined && route.bodyError) payload = route.bodyError(refused, req, headers)
        else if (refused !== undefined) throw refused
        else payload = await route.handle(req, headers, params, parsed)
        if (payload === undefined) throw new Error(`hot route ${route.path} resolved without a body`)
        if (payload instanceof HotAnswer) {
          status = payload.status
          body = payload.text ?? (payload.body === undefined ? undefined : JSON.stringify(payload.body))
          if (payload.jsonType) contentType = `${payload.jsonType}; charset=utf-8`
        } else body = JSON.stringify(payload)
      } catch (err) {
        const answer = errorAnswer(options.envelope, err, req)
        for (const [name, value] of Object.entries(answer.error.headers ?? {})) headers.setHeader(name, value)
        status = answer.error.status
        body = JSON.stringify(answer.body)
        contentType = JSON_CONTENT_TYPE
      }
      if (body === undefined) {
        // As express's res.status(n).end(): no Content-Type, and a length of 0 where a body may be.
        if (status !== 204 && status !== 304) headers.put('content-length', 'Content-Length', '0')
        sendLines(res, status, headers.text(), () => headers.flat())
        return
      }
      // The answer is JSON, and its length the body's, whatever the handler set.
      const length = Buffer.byteLength(body)
      headers.put('content-type', 'Content-Type', contentType)
      headers.put('content-length', 'Content-Length', String(length))
      // sendLines sends a string as latin1 (with the head, in one write): the same bytes as
      // UTF-8 only for ASCII text, so any other goes as its UTF-8 bytes.
      if (typeof body === 'string' && length !== body.length) body = Buffer.from(body)
      sendLines(res, status, headers.text(), () => headers.flat(), body)
    }
    /** A hot route that broke even its error answer (wrote itself, a bad header) must not take
     * the process down: a 500 if nothing was sent yet, else the connection is cut. */
    const lastResort = (req: IncomingMessage, res: ServerResponse, err: unknown) => {
      const { id, log } = req as { id?: string; log?: Logger }
      ;(log ?? options.logger).error({ err }, 'hot route failed')
      if (res.headersSent) {
        res.destroy()
        return
      }
      for (const name of res.getHeaderNames()) res.removeHeader(name)
      // A writeHead that threw may have set the status line's reason ('OK') already.
      res.statusMessage = ''
      for (const [name, value] of securityHeaders) res.setHeader(name, value)
      if (id) res.setHeader('X-Request-Id', id)
      send(res, 500, JSON.stringify(renderEnvelope(options.envelope, toApiError(err), id)))
    }
    answerBeforeExpress(app, (req, res) => {
      if ((req.method !== 'GET' && req.method !== 'POST') || missingHost(req)) return false
      const found = match(req.method, req.url ?? '')
      if (!found) return false
      // A body route takes only the JSON bodies it reads exactly as express.json does; a
      // bodiless route only requests without a body. Everything else is express's.
      if (found[0].body === 'json' ? !plainJsonBody(req, bodyLimit) : hasBody(req)) return false
      serveHot(found[0], found[1], req, res).catch((err: unknown) => lastResort(req, res, err))
      return true
    })
  }
  return { app, metrics, observe }
}

/** One labelled series of the request counter and duration histogram (see createHttpApp). */
interface Series {
  requests: { inc(): void }
  duration: { observe(seconds: number): void }
}

const missingHost = (req: IncomingMessage) => req.headers.host === undefined && req.httpVersion === '1.1'

const METRICS = Symbol.for('quartet.metrics')
const ENVELOPE = Symbol.for('quartet.envelope')

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

/** The metrics registry createHttpApp made for `app` (what `serve` exposes on METRICS_PORT). */
export function metricsRegistryOf(app: object): client.Registry | undefined {
  return (app as { [METRICS]?: client.Registry })[METRICS]
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice(7).trim() : ''
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(token).digest()
  return timingSafeEqual(a, b)
}

/**
 * Puts `answer` in front of express: it sees every request first and returns true when it has
 * taken it (express never sees that one), false to let express handle it as usual. Works for
 * `app.listen`, `http.createServer(app)` and supertest alike (express's app(req, res) delegates
 * to app.handle). Whoever answers here owns what the pipeline would have done: request id,
 * security headers, metrics (HttpApp.observe), errors.
 */
export function answerBeforeExpress(
  app: Express,
  answer: (req: IncomingMessage, res: ServerResponse) => boolean,
): void {
  const expressApp = app as unknown as {
    handle: (req: IncomingMessage, res: ServerResponse, next?: unknown) => void
  }
  const handle = expressApp.handle.bind(app)
  expressApp.handle = (req, res, next) => {
    if (!answer(req, res)) handle(req, res, next)
  }
}

/** The Content-Type express's res.json gives. */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** A JSON answer, with the Content-Type express's res.json gives. */
function send(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status
  res.setHeader('Content-Type', JSON_CONTENT_TYPE)
  res.setHeader('Content-Length', Buffer.byteLength(body))
  res.end(body)
}

/**
 * What express.json reads the same way the hot path does: `application/json` (no parameter but
 * `charset=utf-8`), a Content-Length from 1 to the limit (node's parser then delivers exactly
 * that many bytes), no Transfer-Encoding (a chunked body's size is known only at its end), no
 * Content-Encoding (express.json inflates gzip, deflate and br, and refuses the rest), no
 * Expect. A body over the limit goes to express too, which reads it off and answers the 413.
 */
function plainJsonBody(req: IncomingMessage, limit: number | undefined): boolean {
  const h = req.headers
  const length = h['content-length']
  if (limit === undefined || length === undefined || !/^[1-9][0-9]{0,15}$/.test(length)) return false
  if (Number(length) > limit) return false
  if (h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined || h.expect !== undefined)
    return false
  const type = h['content-type']
  return type !== undefined && JSON_TYPE.test(type)
}
const JSON_TYPE = /^application\/json[ \t]*(;[ \t]*charset=("?)utf-8\2[ \t]*)?$/i

/**
 * body-parser's reading of a size (bytes.parse, 1024-based units): "1mb", "100kb", "512".
 * Undefined when it is not one, and then no request takes a JSON hot route.
 */
export function parseByteLimit(limit: string | number): number | undefined {
  if (typeof limit === 'number') return Number.isFinite(limit) ? limit : undefined
  const m = /^((-|\+)?(\d+(?:\.\d+)?)) *(kb|mb|gb|tb|pb)$/i.exec(limit)
  const units: Record<string, number> = {
    b: 1,
    kb: 1 << 10,
    mb: 1 << 20,
    gb: 1 << 30,
    tb: 1024 ** 4,
    pb: 1024 ** 5,
  }
  const value = m ? parseFloat(m[1]!) * units[m[4]!.toLowerCase()]! : parseInt(limit, 10)
  return Number.isFinite(value) ? Math.floor(value) : undefined
}

/** The body as it arrived; rejects with body-parser's `request.aborted` when the client left. */
function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const aborted = () =>
      reject(Object.assign(new Error('request aborted'), { type: 'request.aborted', status: 400 }))
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => {
      req.off('close', onClose)
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
    })
    const onClose = () => {
      if (!req.complete) aborted()
    }
    req.once('close', onClose)
    req.once('error', aborted)
  })
}

/**
 * express.json's reading of a body, step for step: the UTF-8 and depth checks (verifyJsonBody), the
 * decoding (a leading byte order mark dropped, as iconv-lite does), strict mode (an object or an
 * array, nothing else) and JSON.parse, each failure with body-parser's error `type`; then core's
 * input rule on the value (wellFormedInput's check of the body).
 *
 * The bodies read lately are kept by their text (up to `maxEntries` texts of at most `maxText`
 * characters, the least recently used first out): a client that sends the same body again (a poll, a
 * dashboard's batch of reads) gets the value it passed with before, without parsing and checking
 * it again; both are functions of the text alone, and a refused text is never kept. The value is
 * shared by every request with that text, so it is frozen through: a handler reads its body, it
 * does not change it (one that tried would fail loudly, in every test of it).
 */
export class JsonBodies {
  private readonly values = new Map<string, unknown>()

  constructor(
    private readonly maxEntries = 128,
    private readonly maxText = 4096,
  ) {}

  parse(buf: Buffer): unknown {
    verifyUtf8Body(undefined, undefined, buf, 'utf-8')
    let text = buf.toString('utf8')
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    const keep = text.length <= this.maxText
    const kept = keep ? this.values.get(text) : undefined
    if (kept !== undefined) {
      // Most recently used last: the first key is the one to let go.
      this.values.delete(text)
      this.values.set(text, kept)
      return kept
    }
    const first = /^[ \t\n\r]*([^ \t\n\r])/.exec(text)?.[1]
    // As verifyJsonBody does for express.json: no deeper than MAX_JSON_DEPTH, before parsing.
    assertJsonDepth(text)
    let value: unknown
    try {
      if (first !== '{' && first !== '[') throw new SyntaxError('Unexpected token in JSON (strict mode)')
      value = JSON.parse(text)
    } catch (err) {
      throw Object.assign(err as Error, { type: 'entity.parse.failed', status: 400, body: text })
    }
    assertWellFormedBody(value)
    if (keep) {
      deepFreeze(value)
      keptBodies.add(value as object)
      if (this.values.size >= this.maxEntries) this.values.delete(this.values.keys().next().value!)
      this.values.set(text, value)
    }
    return value
  }
}

const keptBodies = new WeakSet<object>()

/**
 * Whether a body is one JsonBodies keeps (frozen through, handed to every request with its
 * text): what a handler works out from it alone, it may keep beside it (a WeakMap).
 */
export function isKeptBody(value: unknown): boolean {
  return typeof value === 'object' && value !== null && keptBodies.has(value)
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null) return
  Object.freeze(value)
  for (const item of Object.values(value)) deepFreeze(item)
}

/** Whether a request announces a body (express.json would parse, and may refuse, it). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

/**
 * The headers helmet sets, worked out once: with no per-request CSP values (no nonces) helmet's
 * answer is the same for every request, so each answer gets the list instead of a chain of a
 * dozen middlewares. A per-request directive is refused rather than silently frozen.
 */
function staticSecurityHeaders(helmetOptions: HttpAppOptions['helmet']): Array<[string, string]> {
  const csp = helmetOptions?.contentSecurityPolicy
  const directives = typeof csp === 'object' && csp !== null ? (csp.directives ?? {}) : {}
  for (const [name, value] of Object.entries(directives)) {
    const values: unknown[] = Array.isArray(value) ? value : [value]
    if (values.some((v) => typeof v === 'function'))
      throw new Error(`createHttpApp: CSP directive ${name} is computed per request, which is not supported`)
  }
  const headers = new Map<string, string>()
  const collector = {
    setHeader: (name: string, value: unknown) => void headers.set(name, String(value)),
    removeHeader: (name: string) => void headers.delete(name),
  }
  let finished = false
  helmet(helmetOptions)({} as never, collector as never, (err?: unknown) => {
    if (err) throw err
    finished = true
  })
  if (!finished) throw new Error('createHttpApp: helmet did not finish synchronously')
  return [...headers]
}

/** The route template (`/api/v1/keys/:hash`), never the raw path: raw paths explode label cardinality. */
function routeTemplate(req: Request): string {
  const template = (req as Request & { [ROUTE_TEMPLATE]?: string })[ROUTE_TEMPLATE]
  if (template !== undefined) return template
  if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') return req.path
  return 'unmatched'
}

const ROUTE_TEMPLATE = Symbol.for('quartet.routeTemplate')
const ROUTE = Symbol.for('quartet.route')
type Routed = IncomingMessage & { baseUrl?: string; [ROUTE]?: unknown; [ROUTE_TEMPLATE]?: string }

/**
 * A router restores `req.baseUrl` when an error (or `next()`) leaves it, so by `finish` a route
 * under `app.use('/api/v1', router)` that threw would read `/keys/:hash`, not `/api/v1/keys/:hash`.
 * Record the full template at the moment the router assigns `req.route`, while `baseUrl` is still
 * its own: through one accessor on the prototype every request shares (express's request
 * inherits from it), not one defined on each request, which would give every request its own
 * hidden class and keep request garbage alive through young-generation GCs (see log.ts).
 */
Object.defineProperty(IncomingMessage.prototype, 'route', {
  configurable: true,
  enumerable: false,
  get(this: Routed): unknown {
    return this[ROUTE]
  },
  set(this: Routed, value: { path?: unknown } | undefined) {
    this[ROUTE] = value
    this[ROUTE_TEMPLATE] =
      value && typeof value.path === 'string' ? `${this.baseUrl}${value.path}` : undefined
  },
})

function readinessHandler(checks: Record<string, ReadinessCheck>, timeoutMs: number): RequestHandler {
  const entries = Object.entries(checks).map(([name, entry]) =>
    typeof entry === 'function'
      ? { name, check: entry, optional: false, progress: undefined }
      : { name, check: entry.check, optional: entry.optional === true, progress: entry.progress },
  )
  return async (req, res) => {
    res.set('Cache-Control', 'no-store')
    // Shutting down: out of the load balancer before anything else happens (serve sets this).
    if (isDraining(req.app)) {
      res.status(503).json({ status: 'shutting_down', checks: {} })
      return
    }
    // `?scope=process`: whether this process takes requests at all, dependencies not asked. For
    // a proxy balancing replicas: it should leave out a replica that drains, not every replica
    // while a dependency is down (each then answers its own 503 with Retry-After).
    if (req.query.scope === 'process') {
      res.json({ status: 'ok', checks: {} })
      return
    }
    const results = await Promise.all(
      entries.map(async ({ name, check, optional, progress }) => {
        const answeredSince = progress?.()
        try {
          await withTimeout(Promise.resolve().then(check), timeoutMs)
          return { name, optional, state: 'ok' }
        } catch (err) {
          // A ping past its deadline while the dependency answered other work sent after the
          // check began is a busy server, not a dead or frozen one: `slow`, and it passes.
          if (err instanceof TimeoutError && answeredSince?.()) return { name, optional, state: 'slow' }
          req.log?.warn({ check: name, err }, 'readiness check failed')
          return { name, optional, state: err instanceof TimeoutError ? 'timeout' : 'unreachable' }
        }
      }),
    )
    const passing = (state: string) => state === 'ok' || state === 'slow'
    const failing = results.filter((r) => !passing(r.state) && !r.optional).map((r) => r.name)
    const degraded = results.filter((r) => !passing(r.state) && r.optional).map((r) => r.name)
    res.status(failing.length === 0 ? 200 : 503).json({
      status: failing.length ? 'unavailable' : degraded.length ? 'degraded' : 'ok',
      checks: Object.fromEntries(results.map((r) => [r.name, r.state])),
      ...(failing.length ? { failing } : {}),
      ...(degraded.length ? { degraded } : {}),
    })
  }
}

const DRAINING = Symbol.for('quartet.draining')

/** Whether `serve` has begun shutting this app down (readiness answers 503 from then on). */
export function isDraining(app: object): boolean {
  return (app as { [DRAINING]?: boolean })[DRAINING] === true
}

function markDraining(app: Express): void {
  ;(app as Express & { [DRAINING]?: boolean })[DRAINING] = true
}

class TimeoutError extends Error {}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TimeoutError(`timed out after ${ms} ms`)), ms)
    }),
  ]).finally(() => clearTimeout(timer))
}

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
  const server = app.listen(options.port, options.host ?? '0.0.0.0')
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
  let draining = false
  // Connections, so that answers not yet begun when draining starts get `Connection: close`
  // too: node keeps a connection's current response on the socket (`_httpMessage`). Tracked per
  // connection rather than per request, which keep-alive makes far fewer.
  const connections = new Set<net.Socket>()
  server.on('connection', (socket) => {
    connections.add(socket)
    socket.once('close', () => connections.delete(socket))
    lingerUnreadBodies(socket)
  })
  // Prepended so it runs before express (and before a hot route writes its head in one go).
  server.prependListener('request', (req, res) => {
    ;(req.socket as net.Socket & { [CURRENT_REQUEST]?: IncomingMessage })[CURRENT_REQUEST] = req
    if (draining) res.setHeader('Connection', 'close')
  })
  server.on('clientError', clientErrorAnswer(app, log))
  // Node answers these two itself with a bare status line and no body: a request without Host
  // (the pipeline answers it in the envelope instead) and an `Expect` other than 100-continue
  // (417, which RFC 9110 §10.1.1 allows but does not require: the request is served as if the
  // expectation were not there).
  ;(server as Server & { requireHostHeader: boolean }).requireHostHeader = false
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    server.emit('request', req, res),
  )

  const shutdown = (reason = 'shutdown'): Promise<void> => {
    shuttingDown ??= (async () => {
      draining = true
      markDraining(app)
      for (const socket of connections) {
        const res = (socket as net.Socket & { _httpMessage?: ServerResponse | null })._httpMessage
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
