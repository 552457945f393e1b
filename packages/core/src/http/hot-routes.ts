import type { IncomingMessage, ServerResponse } from 'node:http'
import { validateHeaderName, validateHeaderValue } from 'node:http'
import proxyaddr from 'proxy-addr'
import { type EnvelopeStyle, errorAnswer, renderEnvelope, toApiError } from '../errors.ts'
import { type Logger, trackRequest } from '../log.ts'
import { isNodeOwned, sendLines } from '../prebuilt-head.ts'
import { type FirstAnswer, JSON_CONTENT_TYPE, missingHost } from './app-state.ts'
import { hasBody, JsonBodies, parseByteLimit, plainJsonBody, readBody } from './json-bodies.ts'

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

/** What the hot routes share with the express pipeline they stand in front of. */
export interface HotRoutesSetup {
  routes: HotRoute[]
  logger: Logger
  envelope: EnvelopeStyle
  /** The security headers every answer carries (helmet's, worked out once). */
  securityHeaders: ReadonlyArray<readonly [string, string]>
  /** The JSON body limit, as express.json is given it ("1mb"); false: no route takes a body. */
  bodyLimit: string | false
  /** Express's `trust proxy` function, for the client address in the log line. */
  trust: Parameters<typeof proxyaddr>[1]
  /** Counts an answer in the pipeline's request metrics (HttpApp.observe). */
  observe(method: string, route: string, status: number, seconds: number): void
}

/**
 * The answer that serves `setup.routes` before express (registered with answerBeforeExpress):
 * it takes a request of exactly a route's method and path, and leaves every other to express.
 */
export function hotRoutesAnswer(setup: HotRoutesSetup): FirstAnswer {
  const exact = new Map<string, HotRoute>()
  const templated: Array<{ route: HotRoute; pattern: RegExp; names: string[] }> = []
  for (const route of setup.routes) {
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
  const { trust, observe } = setup
  // The express pipeline's order: request id (its value per request), the security headers.
  const first = firstLines(setup.securityHeaders)
  const bodyLimit = setup.bodyLimit === false ? undefined : parseByteLimit(setup.bodyLimit)
  const jsonBodies = new JsonBodies()
  const serveHot = async (
    route: HotRoute,
    params: Record<string, string>,
    req: IncomingMessage,
    res: ServerResponse,
  ) => {
    const started = performance.now()
    const id = trackRequest(setup.logger, req, res, () => proxyaddr(req, trust))
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
      const answer = errorAnswer(setup.envelope, err, req)
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
    ;(log ?? setup.logger).error({ err }, 'hot route failed')
    if (res.headersSent) {
      res.destroy()
      return
    }
    for (const name of res.getHeaderNames()) res.removeHeader(name)
    // A writeHead that threw may have set the status line's reason ('OK') already.
    res.statusMessage = ''
    for (const [name, value] of setup.securityHeaders) res.setHeader(name, value)
    if (id) res.setHeader('X-Request-Id', id)
    send(res, 500, JSON.stringify(renderEnvelope(setup.envelope, toApiError(err), id)))
  }
  return (req, res) => {
    if ((req.method !== 'GET' && req.method !== 'POST') || missingHost(req)) return false
    const found = match(req.method, req.url ?? '')
    if (!found) return false
    // A body route takes only the JSON bodies it reads exactly as express.json does; a
    // bodiless route only requests without a body. Everything else is express's.
    if (found[0].body === 'json' ? !plainJsonBody(req, bodyLimit) : hasBody(req)) return false
    serveHot(found[0], found[1], req, res).catch((err: unknown) => lastResort(req, res, err))
    return true
  }
}

/** A JSON answer, with the Content-Type express's res.json gives. */
function send(res: ServerResponse, status: number, body: string): void {
  res.statusCode = status
  res.setHeader('Content-Type', JSON_CONTENT_TYPE)
  res.setHeader('Content-Length', Buffer.byteLength(body))
  res.end(body)
}
