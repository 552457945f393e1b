import { STATUS_CODES } from 'node:http'
import type { ErrorRequestHandler, RequestHandler } from 'express'

/**
 * The error codes every Quartet service may throw, and their HTTP statuses.
 *
 * This is the one code→status table. Services add their own domain codes to it with
 * `defineErrorCodes` (and a module augmentation of `ErrorCodeTable`), so REST, JSON-RPC and
 * GraphQL envelopes all read the status from the same place and can never disagree.
 */
export const coreErrorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  /** A state-changing page request without the same-origin proof (core web.ts csrfGuard). */
  csrf_rejected: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  gone: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable_entity: 422,
  rate_limit_exceeded: 429,
  header_fields_too_large: 431,
  internal_error: 500,
  bad_gateway: 502,
  service_unavailable: 503,
} as const

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ErrorCodeTable extends Readonly<typeof coreErrorStatus> {}

export type ErrorCode = keyof ErrorCodeTable & string

const statusTable = new Map<string, number>(Object.entries(coreErrorStatus))

/**
 * Adds a service's domain codes to the one table. Call it at module load of the service's
 * `domain/errors.ts` and augment `ErrorCodeTable` with `typeof` the returned object so the
 * compiler knows the new codes. A code registered twice with different statuses is a bug and throws.
 */
export function defineErrorCodes<const T extends Record<string, number>>(codes: T): T {
  for (const [code, status] of Object.entries(codes)) {
    const existing = statusTable.get(code)
    if (existing !== undefined && existing !== status) {
      throw new Error(`error code ${code} is already mapped to ${existing}, not ${status}`)
    }
    if (!Number.isInteger(status) || status < 400 || status > 599) {
      throw new Error(`error code ${code} must map to a 4xx or 5xx status, got ${status}`)
    }
    statusTable.set(code, status)
  }
  return codes
}

export function statusOf(code: ErrorCode): number {
  return statusTable.get(code) ?? 500
}

export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly details: Record<string, unknown> | undefined
  /** Extra response headers, e.g. Retry-After on 429. */
  readonly headers: Record<string, string> | undefined

  constructor(
    code: ErrorCode,
    message: string,
    details?: Record<string, unknown>,
    options?: { headers?: Record<string, string>; cause?: unknown },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'ApiError'
    this.code = code
    this.status = statusOf(code)
    this.details = details
    this.headers = options?.headers
  }

  get isServerError(): boolean {
    return this.status >= 500
  }
}

/** Seconds a client is asked to wait (`Retry-After`) when a dependency is down or frozen. */
export const DEPENDENCY_RETRY_AFTER_SECONDS = 5

/**
 * Anything thrown becomes an ApiError: a dependency that is down, frozen or refusing (Postgres,
 * Redis; see dependencyFailure) is 503 service_unavailable with Retry-After; text Postgres cannot
 * store is 400; anything else unknown is internal_error with a hidden message. Every envelope
 * (REST, JSON-RPC, GraphQL, hot routes) goes through here, so no route can forget the mapping.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  const failure = dependencyFailure(err)
  if (failure === 'unavailable')
    return new ApiError('service_unavailable', 'a dependency is unavailable; try again later', undefined, {
      headers: { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_SECONDS) },
      cause: err,
    })
  if (failure === 'untranslatable_text')
    return new ApiError('bad_request', 'text contains characters the database cannot store', undefined, {
      cause: err,
    })
  return new ApiError('internal_error', 'internal error', undefined, { cause: err })
}

/** Postgres SQLSTATEs that mean "not now" rather than "wrong": connection, shutdown, timeouts, capacity. */
const UNAVAILABLE_SQLSTATE = /^(08...|57014|57P0[1-5]|53300|53400|40P01|55P03)$/
/**
 * Prisma's codes for an unreachable, closed or exhausted database. P2028 is its transaction
 * manager's: a transaction that could not start within maxWait (no connection free) or ran past
 * its timeout, and was rolled back — the pool timeout P2024 of an interactive transaction.
 */
const UNAVAILABLE_PRISMA = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028', 'P2034'])
/** Driver adapter kinds (Prisma 7 over pg) for the same. */
const UNAVAILABLE_KIND = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TransactionWriteConflict',
])
const UNAVAILABLE_SYSCALL = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
])
/**
 * What pg, its pool and ioredis say when a server is gone, frozen or not yet connected ("Client
 * was closed": a query on a connection db.ts ended because an earlier one passed its deadline).
 */
const UNAVAILABLE_MESSAGE =
  /^(Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Connection is closed|Command timed out|Stream isn't writeable|Reached the max retries per request limit|Cannot use a pool after calling end|kv not connected|kv did not answer|kv busy)/

/**
 * What kind of dependency failure `err` is, looking through its causes and Prisma's driver
 * adapter details: 'unavailable' (retry later: the server is down, frozen, restarting, out of
 * connections, or a deadline passed), 'untranslatable_text' (Postgres refused a NUL or bytes of
 * another encoding: the client's input), or undefined (not a dependency failure we know).
 */
export function dependencyFailure(err: unknown): 'unavailable' | 'untranslatable_text' | undefined {
  const queue: unknown[] = [err]
  const seen = new Set<unknown>()
  while (queue.length) {
    const current = queue.shift()
    if (typeof current !== 'object' || current === null || seen.has(current)) continue
    seen.add(current)
    const e = current as {
      name?: unknown
      code?: unknown
      kind?: unknown
      message?: unknown
      meta?: { driverAdapterError?: { cause?: unknown } }
      cause?: unknown
    }
    const code = typeof e.code === 'string' ? e.code : undefined
    if (code === '22021' || code === '22P05') return 'untranslatable_text'
    if (
      code &&
      (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_PRISMA.has(code) || UNAVAILABLE_SYSCALL.has(code))
    )
      return 'unavailable'
    if (typeof e.kind === 'string' && UNAVAILABLE_KIND.has(e.kind)) return 'unavailable'
    if (e.name === 'MaxRetriesPerRequestError') return 'unavailable'
    if (typeof e.message === 'string' && UNAVAILABLE_MESSAGE.test(e.message)) return 'unavailable'
    queue.push(e.meta?.driverAdapterError?.cause, e.cause)
  }
  return undefined
}

/**
 * Messages of 5xx errors never reach clients: they may hold internals (an upstream's reply, a
 * host name). Every 5xx, not only internal_error, shows the status's reason phrase instead; the
 * error code still tells the client what kind of failure it was.
 */
function publicMessage(err: ApiError, casing: 'title' | 'lower'): string {
  if (err.status < 500) return err.message
  const phrase = STATUS_CODES[err.status] ?? 'Internal Server Error'
  return casing === 'title' ? phrase : phrase.toLowerCase()
}

// ---------------------------------------------------------------------------------------------
// Envelopes (README "Errors"): each service renders its own shape from the same ApiError.
// ---------------------------------------------------------------------------------------------

export type EnvelopeStyle = 'status' | 'code' | 'rest'

/** key-info (seed): `{error:{code:<http int>, message}}`, 500 message exactly "Internal Server Error". */
export function renderStatusEnvelope(err: ApiError): { error: { code: number; message: string } } {
  return { error: { code: err.status, message: publicMessage(err, 'title') } }
}

/** design-archive and pickup-share: `{error:{code:"<error_code>", message, details?, request_id?}}`. */
export function renderCodeEnvelope(
  err: ApiError,
  requestId?: string,
): { error: { code: string; message: string; details?: Record<string, unknown>; request_id?: string } } {
  return {
    error: {
      code: err.code,
      message: publicMessage(err, 'lower'),
      ...(err.details && err.status < 500 ? { details: err.details } : {}),
      ...(requestId ? { request_id: requestId } : {}),
    },
  }
}

/** dns-manager REST: `{success:false, error:{code, message, details?}, request_id?}`. */
export function renderRestEnvelope(
  err: ApiError,
  requestId?: string,
): {
  success: false
  error: { code: string; message: string; details?: Record<string, unknown> }
  request_id?: string
} {
  const { error } = renderCodeEnvelope(err)
  return { success: false, error, ...(requestId ? { request_id: requestId } : {}) }
}

export function renderEnvelope(style: EnvelopeStyle, err: ApiError, requestId?: string): unknown {
  switch (style) {
    case 'status':
      return renderStatusEnvelope(err)
    case 'code':
      return renderCodeEnvelope(err, requestId)
    case 'rest':
      return renderRestEnvelope(err, requestId)
  }
}

/** JSON-RPC 2.0 error object. Invalid params keep the spec's -32602; domain errors use the server range. */
export function renderJsonRpcError(
  err: ApiError,
  requestId?: string,
): {
  code: number
  message: string
  data: { error_code: string; http_status: number; details?: Record<string, unknown>; request_id?: string }
} {
  const rpcCode = err.code === 'bad_request' ? -32602 : err.status >= 500 ? -32603 : -32000
  return {
    code: rpcCode,
    message: publicMessage(err, 'lower'),
    data: {
      error_code: err.code,
      http_status: err.status,
      ...(err.details && err.status < 500 ? { details: err.details } : {}),
      ...(requestId ? { request_id: requestId } : {}),
    },
  }
}

/** GraphQL error: the code rides in `extensions.code`, as Apollo and graphql-yoga clients expect. */
export function renderGraphQLError(
  err: ApiError,
  requestId?: string,
): {
  message: string
  extensions: {
    code: string
    http: { status: number }
    details?: Record<string, unknown>
    request_id?: string
  }
} {
  return {
    message: publicMessage(err, 'lower'),
    extensions: {
      code: err.code,
      http: { status: err.status },
      ...(err.details && err.status < 500 ? { details: err.details } : {}),
      ...(requestId ? { request_id: requestId } : {}),
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Express glue.
// ---------------------------------------------------------------------------------------------

/** Body-parser and http-errors failures carry `type`/`status`; map them to our codes. */
function fromExpressError(err: unknown): ApiError | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const e = err as {
    type?: unknown
    status?: unknown
    statusCode?: unknown
    message?: unknown
    limit?: unknown
  }
  switch (e.type) {
    case 'entity.too.large':
      return new ApiError('payload_too_large', `request body exceeds the limit of ${String(e.limit)} bytes`)
    case 'entity.parse.failed':
      return new ApiError('bad_request', 'request body is not valid JSON')
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('unsupported_media_type', String(e.message))
    case 'entity.too.deep':
      return new ApiError(
        'bad_request',
        `request body nests deeper than ${String(e.limit)} levels of arrays and objects`,
        { max_depth: e.limit },
      )
    case 'encoding.invalid_utf8':
      return new ApiError('bad_request', 'request body is not valid UTF-8')
    case 'request.aborted':
      return new ApiError('bad_request', 'request aborted by the client')
  }
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : 0
  if (status >= 400 && status < 500) {
    const code = ([...statusTable.entries()].find(([, s]) => s === status)?.[0] ?? 'bad_request') as ErrorCode
    return new ApiError(code, typeof e.message === 'string' ? e.message : 'bad request')
  }
  return undefined
}

export interface ErrorMiddlewareOptions {
  style: EnvelopeStyle
}

interface RequestLog {
  error: (o: object, m: string) => void
  warn: (o: object, m: string) => void
}

/**
 * Any thrown value as the answer the client gets: the ApiError (an express or body-parser error
 * mapped to its code, anything else a 500) and its envelope. Logs it on the request's logger:
 * 5xx at error with the cause, other rejections but 404 at warn.
 */
export function errorAnswer(
  style: EnvelopeStyle,
  err: unknown,
  req: { id?: unknown; log?: RequestLog },
): { error: ApiError; body: unknown } {
  const error = err instanceof ApiError ? err : (fromExpressError(err) ?? toApiError(err))
  if (error.status >= 500) req.log?.error({ err }, 'request failed')
  else if (error.status !== 404) req.log?.warn({ code: error.code, msg: error.message }, 'request rejected')
  const requestId = typeof req.id === 'string' ? req.id : undefined
  return { error, body: renderEnvelope(style, error, requestId) }
}

/** The last middleware of every app: one error shape for everything, 5xx messages hidden. */
export function errorMiddleware(options: ErrorMiddlewareOptions): ErrorRequestHandler {
  return (err, req, res, next) => {
    if (res.headersSent) {
      next(err)
      return
    }
    const { error, body } = errorAnswer(options.style, err, req as { id?: unknown; log?: RequestLog })
    if (error.headers) res.set(error.headers)
    res.status(error.status).json(body)
  }
}

/** JSON 404 for any unknown route, in the service's envelope. */
export function notFoundMiddleware(): RequestHandler {
  return (req, _res, next) => {
    next(new ApiError('not_found', `no route for ${req.method} ${req.path}`))
  }
}
