import { createHash, timingSafeEqual } from 'node:crypto'
import express, { type Express } from 'express'
import helmet from 'helmet'
import client from 'prom-client'
import type proxyaddr from 'proxy-addr'
import { ApiError, type EnvelopeStyle, errorMiddleware, notFoundMiddleware } from './errors.ts'
import { httpLogger, type Logger } from './log.ts'
import { answerBeforeExpress, ENVELOPE, METRICS, missingHost } from './http/app-state.ts'
import { type HotRoute, hotRoutesAnswer } from './http/hot-routes.ts'
import { type ReadinessCheck, readinessHandler } from './http/readiness.ts'
import { routeTemplate } from './http/route-template.ts'
import { verifyJsonBody, wellFormedInput } from './validate.ts'

/**
 * The HTTP skeleton every service shares: createHttpApp builds the express app (this file);
 * answers asked before express (http/app-state.ts) and the hot routes served that way
 * (http/hot-routes.ts); express.json's reading of bodies, for them (http/json-bodies.ts);
 * readiness (http/readiness.ts); the metrics route label (http/route-template.ts); and serve,
 * with graceful shutdown (http/serve.ts).
 */
export {
  answerBeforeExpress,
  type FirstAnswer,
  isDraining,
  metricsRegistryOf,
  onServer,
  requestListener,
  serverFor,
} from './http/app-state.ts'
export { type HeaderSink, HotAnswer, type HotRoute } from './http/hot-routes.ts'
export { isKeptBody, JsonBodies, parseByteLimit } from './http/json-bodies.ts'
export type { ReadinessCheck } from './http/readiness.ts'
export { serve, type ServeOptions, type Serving } from './http/serve.ts'

export interface HttpAppOptions {
  /** Service name, used in metrics and logs. */
  name: string
  logger: Logger
  envelope: EnvelopeStyle
  /** Express `trust proxy`: a hop count or CIDR list (config's zTrustProxy). */
  trustProxy: number | string[]
  /**
   * JSON body limit, e.g. "1mb". `false`: the service takes no request bodies, so none is read or
   * parsed, and a request with one meets the routes as it is (a read-only resource answers 405
   * to a POST, whatever its body, rather than 400 for JSON it would never have read).
   */
  bodyLimit?: string | false
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

  if (options.bodyLimit !== false)
    app.use(express.json({ limit: options.bodyLimit ?? '1mb', verify: verifyJsonBody }))
  app.use(wellFormedInput())

  mount(app)

  app.use(notFoundMiddleware())
  app.use(errorMiddleware({ style: options.envelope }))

  if (options.hotRoutes?.length)
    answerBeforeExpress(
      app,
      hotRoutesAnswer({
        routes: options.hotRoutes,
        logger: options.logger,
        envelope: options.envelope,
        securityHeaders,
        bodyLimit: options.bodyLimit ?? '1mb',
        trust: app.get('trust proxy fn') as Parameters<typeof proxyaddr>[1],
        observe,
      }),
    )
  return { app, metrics, observe }
}

/** One labelled series of the request counter and duration histogram (see createHttpApp). */
interface Series {
  requests: { inc(): void }
  duration: { observe(seconds: number): void }
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice(7).trim() : ''
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(token).digest()
  return timingSafeEqual(a, b)
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
