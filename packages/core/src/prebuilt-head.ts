import { STATUS_CODES, validateHeaderName, validateHeaderValue, type ServerResponse } from 'node:http'

/**
 * A response head whose header lines were validated and joined once, for answers that repeat
 * the same headers on every request (design-archive's documents).
 *
 * `writeHead` checks every header line of every response against two regular expressions and
 * builds the head string anew: for design-archive's 304 of eight lines that was 9.6% of the
 * service's CPU (perf: `_storeHeader`, `processHeader`), 12.9% for a 200 of fifteen. And
 * `end(body)` corks the socket and writes the head-and-body text and an empty chunk through
 * `writev`, where one string written alone takes the direct path. `sendPrebuilt` gives node the
 * finished head (and a small body with it) as the response's head text, which node writes in one
 * `write`.
 *
 * Only what node would decide the same way for every request is prebuilt. What node decides per
 * request (the `Date`, `Connection` and `Keep-Alive` lines) is added the way `_storeHeader`
 * adds them, and every request whose head node would build differently (a connection that
 * closes, HTTP/1.0, `Expect`, a header already set on the response, such as the `Connection:
 * close` of a draining server) is answered through `writeHead` with the same lines, and
 * `sendPrebuilt` returns false. A test compares the bytes on the wire of both ways, on every Node
 * the matrix runs, so a change in node's internals fails there rather than in production.
 * Measured against the same functions through `writeHead` + `end` in issue 46: without this,
 * design-archive's manifest.json answers cost 11–25% more CPU (BENCHMARKS.md, "Removed in issue
 * 46, and what each was worth").
 */
export interface PrebuiltHead {
  readonly status: number
  /** The header lines, each ending in CRLF. */
  readonly text: string
  /** The same header lines as a flat name, value list, for the heads node builds itself. */
  readonly lines: readonly string[]
}

/** False for 304, 204 and 1xx: node sends no body, and neither do `sendPrebuilt` and `sendLines`. */
const hasBody = (status: number): boolean =>
  !(status === 204 || status === 304 || (status >= 100 && status < 200))

/** Header names node writes or interprets itself: never part of a prebuilt head. */
const NODE_OWNED = new Set(['connection', 'keep-alive', 'date', 'transfer-encoding', 'trailer', 'expect'])

export function prebuiltHead(
  status: number,
  headers: ReadonlyArray<readonly [string, string]>,
): PrebuiltHead {
  if (!Number.isInteger(status) || STATUS_CODES[status] === undefined)
    throw new RangeError(`no such status: ${status}`)
  let text = ''
  let contentLength = false
  const lines: string[] = []
  for (const [name, value] of headers) {
    validateHeaderName(name)
    validateHeaderValue(name, value)
    const lower = name.toLowerCase()
    if (NODE_OWNED.has(lower)) throw new Error(`${name} is node's to write, not a prebuilt head's`)
    if (lower === 'content-length') contentLength = true
    text += `${name}: ${value}\r\n`
    lines.push(name, value)
  }
  // Without a length node would frame the body with chunked encoding, a per-response decision.
  if (hasBody(status) && !contentLength) throw new Error(`a prebuilt ${status} needs a Content-Length`)
  return { status, text, lines }
}

/** Whether node writes or interprets a header itself (lower-case name): a head holding one is node's to build. */
export const isNodeOwned = (lowerName: string): boolean => NODE_OWNED.has(lowerName)

/** What node's ServerResponse keeps, read (and written) here by their long-standing names. */
interface NodeResponse {
  _header: string | null
  _headerSent: boolean
  _hasBody: boolean
  _keepAliveTimeout?: number
  _maxRequestsPerSocket?: number
  _defaultKeepAlive?: boolean
  _removedConnection?: boolean
  _expect_continue?: boolean
  shouldKeepAlive?: boolean
  useChunkedEncodingByDefault?: boolean
  maxRequestsOnConnectionReached?: boolean
}

/**
 * Sends `head`, an `X-Request-Id` line (`requestId` as `requestIdFor` gives it: a checked
 * incoming id or a UUID, never validated again here) and, where the status has one, `body`: a
 * string (sent as latin1, one byte a character, in the same write as the head) or a Buffer.
 * When node would build this request's head differently from the prebuilt one, the same lines go
 * through `writeHead` instead, and the result is false. Must be the first thing that writes to
 * `res`.
 */
export function sendPrebuilt(
  res: ServerResponse,
  head: PrebuiltHead,
  requestId: string,
  body?: string | Buffer,
): boolean {
  return sendLines(
    res,
    head.status,
    `${head.text}X-Request-Id: ${requestId}\r\n`,
    () => [...head.lines, 'X-Request-Id', requestId],
    body,
  )
}

/**
 * `sendPrebuilt` for a head put together per answer: `lines` are its header lines, each
 * `Name: value\r\n`, every one checked already as writeHead would (validateHeaderName and
 * validateHeaderValue, or made by the caller from checked parts), none node writes itself
 * (`isNodeOwned`), a Content-Length among them where the status has a body. `flat` gives the same
 * lines as writeHead's array, for a request whose head node would build differently, or when
 * `lines` is undefined. A string body is sent as latin1, as sendPrebuilt sends it: pass a
 * Buffer for one that is not ASCII. Must be the first thing that writes to `res`.
 */
export function sendLines(
  res: ServerResponse,
  status: number,
  lines: string | undefined,
  flat: () => string[],
  body?: string | Buffer,
): boolean {
  const r = res as unknown as NodeResponse
  const reason = STATUS_CODES[status]
  if (
    lines === undefined ||
    reason === undefined ||
    r.shouldKeepAlive !== true ||
    r.useChunkedEncodingByDefault !== true ||
    r.maxRequestsOnConnectionReached !== false ||
    r._expect_continue !== false ||
    r._removedConnection === true ||
    r._defaultKeepAlive !== true ||
    typeof r._keepAliveTimeout !== 'number' ||
    !res.sendDate ||
    res.headersSent ||
    res.getHeaderNames().length > 0
  ) {
    res.writeHead(status, flat())
    if (typeof body === 'string') res.end(body, 'latin1')
    else res.end(body)
    return false
  }

  res.statusCode = status
  res.statusMessage = reason
  if (!hasBody(status)) r._hasBody = false
  const sendsBody = r._hasBody && body !== undefined
  const text =
    'HTTP/1.1 ' +
    status +
    ' ' +
    reason +
    '\r\n' +
    lines +
    'Date: ' +
    httpDate() +
    '\r\n' +
    connectionLines(r._keepAliveTimeout, r._maxRequestsPerSocket)
  if (sendsBody && typeof body === 'string') {
    // The body rides in the head's text: end() then sends that one string in one write.
    r._header = text + body
    r._headerSent = false
    res.end()
  } else {
    r._header = text
    r._headerSent = false
    if (sendsBody) res.end(body)
    else res.end()
  }
  return true
}

// The lines _storeHeader ends a kept-alive response's head with, for the server's settings.
let linesTimeout: number | undefined
let linesMax: number | undefined
let lines = ''
function connectionLines(keepAliveTimeout: number, maxRequestsPerSocket: number | undefined): string {
  if (keepAliveTimeout !== linesTimeout || maxRequestsPerSocket !== linesMax) {
    linesTimeout = keepAliveTimeout
    linesMax = maxRequestsPerSocket
    const max = ~~(maxRequestsPerSocket ?? 0) > 0 ? `, max=${maxRequestsPerSocket}` : ''
    lines =
      'Connection: keep-alive\r\n' +
      (keepAliveTimeout ? `Keep-Alive: timeout=${Math.floor(keepAliveTimeout / 1000)}${max}\r\n` : '') +
      '\r\n'
  }
  return lines
}

// The Date line's text, made once a second (node's own utcDate does the same).
let dateText = ''
let dateUntil = 0
function httpDate(): string {
  const now = Date.now()
  if (now >= dateUntil) {
    dateText = new Date(now).toUTCString()
    dateUntil = now - (now % 1000) + 1000
  }
  return dateText
}
