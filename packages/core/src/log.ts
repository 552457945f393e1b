import { randomUUID } from 'node:crypto'
import { IncomingMessage, type ServerResponse } from 'node:http'
import type { RequestHandler } from 'express'
import pino, { type DestinationStream, type Logger } from 'pino'

export type { Logger } from 'pino'

/** Paths never written to a log line: credentials, cookies, passwords, secrets. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-secret"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
]

export function createLogger(options: {
  name: string
  level?: string
  destination?: DestinationStream
}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // stdout written asynchronously: a synchronous write per request line costs a service a large
    // share of its throughput. pino flushes what is buffered when the process exits.
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  )
}

/**
 * Query parameters whose values are secrets and never reach a log line: pickup codes and link
 * tokens, access grants, authorization codes, keys, passwords, presigned signatures (matched without case).
 */
export const SECRET_QUERY_PARAMS = [
  'code',
  'token',
  'access',
  'authcode',
  'auth_code',
  'key',
  'api_key',
  'apikey',
  'secret',
  'password',
  'signature',
  'sig',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
]
const SECRET_PARAM_SET = new Set(SECRET_QUERY_PARAMS)

/** A URL as it may be logged: the values of SECRET_QUERY_PARAMS replaced by `[redacted]`. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const pairs = url.slice(q + 1).split('&')
  let changed = false
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i]!
    const eq = pair.indexOf('=')
    if (eq < 0) continue
    let name = pair.slice(0, eq)
    try {
      name = decodeURIComponent(name.replaceAll('+', ' '))
    } catch {
      // a malformed name is logged as sent
    }
    if (SECRET_PARAM_SET.has(name.toLowerCase())) {
      pairs[i] = `${pair.slice(0, eq)}=[redacted]`
      changed = true
    }
  }
  return changed ? `${url.slice(0, q)}?${pairs.join('&')}` : url
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Accept a well-formed incoming X-Request-Id (from the proxy or the client), else make one. */
export function requestIdFor(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id']
  const value = Array.isArray(incoming) ? incoming[0] : incoming
  return value && REQUEST_ID.test(value) ? value : randomUUID()
}

/**
 * Request logging: `req.id` and `req.log` (a child logger carrying `req_id` and `ip`) on every
 * request, `X-Request-Id` on every response, and one completion line per request with the
 * method, url, selected headers (credentials redacted), status and response time. `ip` is the
 * client address as express resolved it (`req.ip`, after `trust proxy`).
 *
 * Written by hand rather than with pino-http: that wraps every request in serializers and a child
 * logger even when nothing is logged, which cost a service about a third of its throughput. Here
 * the child logger is made only when something logs, and the completion line only when its level
 * is enabled.
 */
export function httpLogger(logger: Logger): RequestHandler {
  return (req, res, next) => {
    res.setHeader(
      'X-Request-Id',
      trackRequest(logger, req, res, () => req.ip),
    )
    next()
  }
}

/**
 * What httpLogger does for one request, for a handler that runs before express (a hot route):
 * `req.id`, the lazy `req.log`, and the completion line when the response closes. Returns the
 * request id, for the caller to send as `X-Request-Id`. `ipOf` resolves the client address
 * (express's `req.ip`, or the same `trust proxy` rule applied to a bare request).
 */
export function trackRequest(
  logger: Logger,
  req: IncomingMessage & { originalUrl?: string },
  res: ServerResponse,
  ipOf: () => string | undefined,
): string {
  const id = requestIdFor(req)
  req.id = id
  ;(req as Tracked)[TRACKING] = { logger, id, ipOf, child: undefined }
  const started = performance.now()
  const done = (): void => {
    const status = res.statusCode
    const aborted = !res.writableFinished
    const level = status >= 500 ? 'error' : aborted ? 'warn' : 'info'
    if (!logger.isLevelEnabled(level)) return
    req.log[level](
      {
        req: {
          method: req.method,
          url: redactUrl(req.originalUrl ?? req.url ?? ''),
          headers: pick(req.headers, [
            'host',
            'user-agent',
            'authorization',
            'x-api-key',
            'x-api-secret',
            'cookie',
          ]),
        },
        res: { statusCode: status },
        responseTime: Math.round(performance.now() - started),
      },
      aborted ? 'request aborted' : 'request completed',
    )
  }
  res.once('close', done)
  return id
}

const TRACKING = Symbol.for('quartet.requestTracking')
type Tracked = IncomingMessage & {
  [TRACKING]?: { logger: Logger; id: string; ipOf: () => string | undefined; child: Logger | undefined }
}

/**
 * `req.log`, made on first use from what trackRequest recorded, through one getter on the
 * prototype every request shares (express's request inherits from it). A getter defined on each
 * request instead (a new closure per request) gives every request object its own hidden class,
 * and V8 then keeps request garbage alive through young-generation collections: measured on the
 * key-info hot route, ~35% of all allocations survived each scavenge (pauses of 5-10 ms) against
 * ~6% without it. A request that was never tracked has no `log`; assigning one sets a plain value.
 */
Object.defineProperty(IncomingMessage.prototype, 'log', {
  configurable: true,
  enumerable: false,
  get(this: Tracked): Logger | undefined {
    const tracking = this[TRACKING]
    if (!tracking) return undefined
    return (tracking.child ??= tracking.logger.child({ req_id: tracking.id, ip: clientIp(tracking.ipOf) }))
  },
  set(this: IncomingMessage, value: Logger) {
    Object.defineProperty(this, 'log', { value, writable: true, configurable: true, enumerable: false })
  },
})

/**
 * The client address of a tracked request as the pipeline resolves it (TRUST_PROXY): express's
 * `req.ip`, and the same address for a hot route, which runs before express gives one.
 */
export function requestIp(req: IncomingMessage): string | undefined {
  const tracking = (req as Tracked)[TRACKING]
  return tracking ? clientIp(tracking.ipOf) : undefined
}

/**
 * `req.ip` reads the socket's address; a socket already torn down (a client that aborted
 * mid-upload) has none and the getter throws, which must never crash the process from a log line.
 */
function clientIp(ipOf: () => string | undefined): string | undefined {
  try {
    return ipOf()
  } catch {
    return undefined
  }
}

declare module 'http' {
  interface IncomingMessage {
    /** The request id (X-Request-Id), set by httpLogger. */
    id: string
    /** A logger whose lines carry this request's `req_id` and `ip`. */
    log: Logger
  }
}

function pick(headers: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of names) if (headers[name] !== undefined) out[name] = headers[name]
  return out
}
