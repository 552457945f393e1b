import { ApiError, errorAnswer, renderJsonRpcError, statusOf, toApiError } from '@quartet/core/errors'
import type { ErrorCode } from '@quartet/core/errors'
import { HotAnswer, type HeaderSink, type HotRoute } from '@quartet/core/http'
import { jsonBytesOf } from '@quartet/core/json-text'
import { type Logger, requestIp } from '@quartet/core/log'
import { type ErrorRequestHandler, Router, type Request, type Response } from 'express'
import type { IncomingHttpHeaders } from 'node:http'
import type { RateLimitDecision } from '@quartet/core/rate-limit'
import type { Principal } from '../domain/service.ts'
import { type AnswerMemo, keptAnswer, requestKey } from './answer-memo.ts'
import type { Operation } from './operation.ts'
import type { Pipeline } from './pipeline.ts'

/** JSON-RPC 2.0 protocol errors (spec §5.1). */
export const RPC_PARSE_ERROR = -32700
export const RPC_INVALID_REQUEST = -32600
export const RPC_METHOD_NOT_FOUND = -32601
export const RPC_INVALID_PARAMS = -32602
export const RPC_INTERNAL_ERROR = -32603

/**
 * Each domain error has its own fixed code in the server range, so clients can switch on the
 * number alone; `data.error_code` carries the same code as REST and GraphQL.
 */
export const rpcErrorCodes: Partial<Record<ErrorCode, number>> = {
  auth_invalid_credentials: -32001,
  auth_ip_not_allowed: -32002,
  api_access_disabled: -32003,
  not_found: -32004,
  subdomain_not_found: -32005,
  dns_record_not_found: -32006,
  insufficient_balance: -32007,
  renewal_not_yet_available: -32008,
  renewal_window_expired: -32009,
  quota_exceeded: -32010,
  rate_limit_exceeded: -32011,
  provider_operation_failed: -32012,
  subdomain_taken: -32013,
  key_limit_reached: -32014,
  conflict: -32015,
  service_unavailable: -32016,
  credential_scope_forbidden: -32017,
}

interface RpcError {
  code: number
  message: string
  data?: unknown
}
interface RpcResponse {
  jsonrpc: '2.0'
  id: string | number | null
  result?: unknown
  error?: RpcError
}

export function rpcError(err: unknown, requestId?: string): RpcError {
  const apiError = toApiError(err)
  const rendered = renderJsonRpcError(apiError, requestId)
  const code =
    apiError.code === 'bad_request'
      ? RPC_INVALID_PARAMS
      : (rpcErrorCodes[apiError.code] ?? (apiError.status >= 500 ? RPC_INTERNAL_ERROR : -32000))
  return { ...rendered, code }
}

/**
 * A protocol error (malformed JSON, not a call, unknown method) carries `data.error_code` like
 * every other error, so a client can switch on it alone.
 */
const protocolError = (
  code: number,
  message: string,
  id: RpcResponse['id'] = null,
  data?: Record<string, unknown>,
): RpcResponse => {
  const errorCode: ErrorCode = code === RPC_METHOD_NOT_FOUND ? 'not_found' : 'bad_request'
  return {
    jsonrpc: '2.0',
    id,
    error: { code, message, data: { error_code: errorCode, http_status: statusOf(errorCode), ...data } },
  }
}

const requestIdOf = (req: Request) => (typeof req.id === 'string' ? req.id : undefined)

const validId = (id: unknown): id is string | number | null =>
  id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))

/** A JSON-RPC HTTP answer: status, headers beyond the pipeline's, and the JSON body (none: no body). */
export interface RpcHttpAnswer {
  status: number
  headers: Record<string, string>
  body?: unknown
  /** The body's UTF-8 JSON, when it is made already (a memoised answer). */
  bytes?: Buffer
}

export interface RpcOptions {
  maxBatch: number
  /** Answers of read-only requests made of cached views alone (answer-memo.ts); none without a views cache. */
  memo?: AnswerMemo<RpcHttpAnswer> | undefined
}

/**
 * JSON-RPC 2.0 over HTTP: single calls and batches (up to `maxBatch`), notifications get no
 * response, a batch of only notifications gets no body. Authentication happens once per HTTP
 * request; every call in a batch spends one rate-limit point.
 *
 * HTTP status: every request whose body is read as JSON gets 200 (204 when nothing is answered),
 * whatever its calls' errors (-32700 and refused credentials, a rate limit, an outage included):
 * the error is in the response object, where JSON-RPC clients look for it (json-rpc-2.0's own
 * fetch transport rejects anything but 200 with the status text alone). The errors' headers
 * (Retry-After) still reach the HTTP answer. Only a body refused before it is read as JSON (over
 * BODY_LIMIT 413, another charset 415) keeps its HTTP status (rpcBodyErrorAnswer). Served by the express router
 * (rpcRouter) and before express (rpcHotRoutes) alike, so both give the same answer.
 */
export function createRpcHandler(
  operations: readonly Operation[],
  pipeline: Pipeline,
  options: RpcOptions,
): (
  body: unknown,
  caller: { headers: IncomingHttpHeaders; ip: string | undefined; requestId: string | undefined },
) => Promise<RpcHttpAnswer> {
  const byName = new Map(operations.map((op) => [op.name, op]))

  /** One call's answer (null for a notification), and the error it failed with. */
  async function handleCall(
    call: unknown,
    principal: Principal,
    spend: Pipeline['spend'],
    requestId?: string,
  ): Promise<{ response: RpcResponse | null; failure?: ApiError }> {
    const shape = callShape(call)
    if ('invalid' in shape) return { response: shape.invalid }
    const { c, id, isNotification } = shape
    const op = byName.get(c.method as string)
    if (!op)
      return {
        response: isNotification
          ? null
          : protocolError(RPC_METHOD_NOT_FOUND, `method not found: ${c.method}`, id),
      }
    const params = c.params
    try {
      await spend(principal)
      if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params)))
        throw new ApiError('bad_request', 'params must be an object of named parameters', { field: 'params' })
      const result = await pipeline.run(op, principal, params ?? {})
      return { response: isNotification ? null : { jsonrpc: '2.0', id, result } }
    } catch (err) {
      const failure = toApiError(err)
      return {
        response: isNotification ? null : { jsonrpc: '2.0', id, error: rpcError(failure, requestId) },
        failure,
      }
    }
  }

  return async (body, { headers, ip, requestId }) => {
    if (body === undefined || body === null || typeof body !== 'object')
      return {
        status: 200,
        headers: {},
        body: protocolError(
          RPC_INVALID_REQUEST,
          'invalid request: expected a JSON-RPC object or array (Content-Type: application/json)',
        ),
      }
    const batch = Array.isArray(body)
    const calls: unknown[] = batch ? body : [body]
    if (batch && calls.length === 0)
      return {
        status: 200,
        headers: {},
        body: protocolError(RPC_INVALID_REQUEST, 'invalid request: empty batch'),
      }
    if (calls.length > options.maxBatch)
      return {
        status: 200,
        headers: {},
        body: protocolError(
          RPC_INVALID_REQUEST,
          `invalid request: a batch holds at most ${options.maxBatch} calls`,
          null,
          {
            error_code: 'bad_request',
            details: { max_batch: options.maxBatch, got: calls.length },
          },
        ),
      }

    const readOnly = !calls.some((call) => byName.get(methodOf(call))?.write ?? false)
    // The same read-only request, answered before from cached views alone that are still the
    // ones it would read: the same answer, once its points are spent (with authentication's kv
    // command when it can: pipeline.ts, `admit`). A refused point runs the calls as usual, with
    // the decisions taken (each call refused or served as it would be).
    const { memo } = options
    const memoKey = memo && readOnly ? requestKey(body) : undefined
    let principal: Principal
    let prepaid: RateLimitDecision[] | null = null
    try {
      if (memoKey === undefined) principal = await pipeline.authenticate(headers, ip)
      else
        ({ principal, prepaid } = await pipeline.admit(headers, ip, (credentialId) =>
          memo!.pointsOf(credentialId, memoKey),
        ))
    } catch (err) {
      // Nothing in the request can be served: each call gets the error under its own id (a
      // client matches answers to its calls by id: json-rpc-2.0's would wait forever for an
      // `id: null`), notifications nothing, with the error's headers (Retry-After) and HTTP 200
      // like every answer to a JSON-RPC request (see above).
      const apiError = toApiError(err)
      const error = rpcError(apiError, requestId)
      const responses = calls.flatMap((call): RpcResponse[] => {
        const shape = callShape(call)
        if ('invalid' in shape) return [shape.invalid]
        return shape.isNotification ? [] : [{ jsonrpc: '2.0', id: shape.id, error }]
      })
      const answerHeaders = { ...apiError.headers }
      if (responses.length === 0) return { status: 204, headers: answerHeaders }
      return { status: 200, headers: answerHeaders, body: batch ? responses : responses[0] }
    }

    let spend = pipeline.spend
    if (memoKey !== undefined) {
      const kept = await keptAnswer(memo!, pipeline, principal, memoKey, prepaid)
      if ('answer' in kept) return kept.answer
      spend = kept.spend
    }

    // A batch of reads runs side by side (JSON-RPC 2.0 lets a server run a batch's calls in any
    // order): its rate-limit points are taken in the calls' order in one kv round trip, and its
    // reads share the pool. A batch with a write runs call by call, in order, as clients expect.
    const outcomes = readOnly
      ? await Promise.all(calls.map((call) => handleCall(call, principal, spend, requestId)))
      : await inOrder(calls, (call) => handleCall(call, principal, spend, requestId))
    const responses: RpcResponse[] = []
    const failures: ApiError[] = []
    for (const { response, failure } of outcomes) {
      if (failure) failures.push(failure)
      if (response) responses.push(response)
    }
    // Headers of the calls' errors (Retry-After of a rate limit or an outage) reach the HTTP
    // answer; of two Retry-After values the later one, so a client that waits for it finds both gone.
    const extra = new Map<string, [string, string]>()
    for (const failure of failures)
      for (const [name, value] of Object.entries(failure.headers ?? {})) {
        const lower = name.toLowerCase()
        const current = extra.get(lower)?.[1]
        if (lower !== 'retry-after' || current === undefined || Number(value) > Number(current))
          extra.set(lower, [name, String(value)])
      }
    const answerHeaders = Object.fromEntries(extra.values())
    if (responses.length === 0) return { status: 204, headers: answerHeaders }
    const answer = {
      status: 200,
      headers: answerHeaders,
      body: batch ? responses : responses[0],
    }
    // Kept when every call answered a result (no error, no notification) from the views cache.
    if (memoKey !== undefined && responses.length === calls.length && failures.length === 0)
      return (
        memo!.keep(
          principal,
          memoKey,
          responses.map((r) => r.result),
          () => {
            const bytes = rpcBytes(answer.body) ?? Buffer.from(JSON.stringify(answer.body))
            return { answer: { ...answer, bytes }, size: bytes.length }
          },
        ) ?? answer
      )
    return answer
  }
}

/** A call as JSON-RPC 2.0 has it (an object, `jsonrpc: "2.0"`, a method name, a valid id or none), or its -32600. */
function callShape(
  call: unknown,
): { invalid: RpcResponse } | { c: Record<string, unknown>; id: RpcResponse['id']; isNotification: boolean } {
  if (typeof call !== 'object' || call === null || Array.isArray(call))
    return { invalid: protocolError(RPC_INVALID_REQUEST, 'invalid request: each call must be an object') }
  const c = call as Record<string, unknown>
  const isNotification = !('id' in c)
  const id = validId(c.id) ? c.id : null
  if (c.jsonrpc !== '2.0' || typeof c.method !== 'string' || (!isNotification && !validId(c.id)))
    return {
      invalid: protocolError(
        RPC_INVALID_REQUEST,
        'invalid request: needs jsonrpc "2.0", a method name and a string, number or null id',
        id,
      ),
    }
  return { c, id, isNotification }
}

const methodOf = (call: unknown): string =>
  typeof call === 'object' && call !== null && typeof (call as { method?: unknown }).method === 'string'
    ? (call as { method: string }).method
    : ''

async function inOrder<T, R>(items: readonly T[], run: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = []
  for (const item of items) out.push(await run(item))
  return out
}

/** Writes an RpcHttpAnswer on express's response. */
function sendRpc(res: Response, answer: RpcHttpAnswer): void {
  for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value)
  res.status(answer.status)
  if (answer.body === undefined) res.end()
  else res.json(answer.body)
}

/** JSON-RPC 2.0 at `/rpc` through express (createRpcHandler). */
export function rpcRouter(operations: readonly Operation[], pipeline: Pipeline, options: RpcOptions): Router {
  const handle = createRpcHandler(operations, pipeline, options)
  const router = Router()
  router.post('/', async (req: Request, res: Response) => {
    sendRpc(res, await handle(req.body, { headers: req.headers, ip: req.ip, requestId: requestIdOf(req) }))
  })
  return router
}

/**
 * JSON-RPC at `<prefix>/rpc` exactly, answered before express (core's hot routes): a POST with a
 * plain JSON body (core reads and checks it as express.json and the input rule do; anything else
 * goes on to express). The same handler, headers (Cache-Control: no-store) and body refusals.
 */
export function rpcHotRoutes(
  operations: readonly Operation[],
  pipeline: Pipeline,
  options: RpcOptions,
  prefixes: readonly string[],
): HotRoute[] {
  const handle = createRpcHandler(operations, pipeline, options)
  const answer = (headers: HeaderSink, a: RpcHttpAnswer) => {
    for (const [name, value] of Object.entries(a.headers)) headers.setHeader(name, value)
    const bytes = a.bytes ?? rpcBytes(a.body)
    return bytes === undefined ? new HotAnswer(a.status, a.body) : new HotAnswer(a.status, undefined, bytes)
  }
  return prefixes.map((prefix) => ({
    path: `${prefix}/rpc`,
    method: 'POST',
    body: 'json',
    async handle(req, headers, _params, body) {
      // As app.ts sets for every answer of the three call styles, errors included.
      headers.setHeader('Cache-Control', 'no-store')
      const id = (req as { id?: unknown }).id
      return answer(
        headers,
        await handle(body, {
          headers: req.headers,
          ip: requestIp(req),
          requestId: typeof id === 'string' ? id : undefined,
        }),
      )
    },
    bodyError(err, req, headers) {
      headers.setHeader('Cache-Control', 'no-store')
      return answer(headers, rpcBodyErrorAnswer(err, req))
    },
  }))
}

/**
 * The UTF-8 JSON of an answer whose results include cached views (they carry their bytes), with
 * those bytes spliced in: what JSON.stringify writes, without serialising or encoding the rows
 * again. Undefined when no result has kept bytes.
 */
function rpcBytes(body: unknown): Buffer | undefined {
  const responses = (Array.isArray(body) ? body : [body]) as RpcResponse[]
  if (!responses.some((r) => jsonBytesOf(r?.result) !== undefined)) return undefined
  const parts: Buffer[] = []
  let text = Array.isArray(body) ? '[' : ''
  responses.forEach((r, i) => {
    if (i > 0) text += ','
    const kept = r.error === undefined ? jsonBytesOf(r.result) : undefined
    if (kept === undefined) text += JSON.stringify(r)
    else {
      // The key order of the responses handleCall makes: jsonrpc, id, result.
      parts.push(Buffer.from(`${text}{"jsonrpc":"2.0","id":${JSON.stringify(r.id)},"result":`), kept)
      text = '}'
    }
  })
  if (Array.isArray(body)) text += ']'
  parts.push(Buffer.from(text))
  return Buffer.concat(parts)
}

/**
 * Refusals of the body before the router sees it, in the JSON-RPC shape rather than the REST
 * envelope (express.json and core's input checks run app-wide, so they arrive as errors, not
 * requests): malformed JSON is the spec's -32700 parse error (HTTP 200, like every protocol
 * error); anything else is one error object: with HTTP 200 for a string core's input rule
 * refuses (the body was read), with the error's HTTP status and headers for a body over the limit
 * or in a charset we do not read.
 */
export function rpcBodyErrors(): ErrorRequestHandler {
  return (err, req, res, _next) => sendRpc(res, rpcBodyErrorAnswer(err, req))
}

/** rpcBodyErrors' answer, for express and the hot route alike. */
export function rpcBodyErrorAnswer(err: unknown, req: { id?: unknown; log?: Logger }): RpcHttpAnswer {
  if ((err as { type?: unknown }).type === 'entity.parse.failed')
    return {
      status: 200,
      headers: {},
      body: protocolError(RPC_PARSE_ERROR, 'parse error: the body is not valid JSON'),
    }
  // Nested deeper than core's MAX_JSON_DEPTH (checked on the text, before parsing): JSON, but no
  // request this server takes, so -32600 invalid request like a batch over RPC_MAX_BATCH, with
  // the HTTP status every protocol error gets.
  if ((err as { type?: unknown }).type === 'entity.too.deep') {
    const maxDepth = (err as { limit?: unknown }).limit
    return {
      status: 200,
      headers: {},
      body: protocolError(
        RPC_INVALID_REQUEST,
        `invalid request: the body nests deeper than ${String(maxDepth)} levels of arrays and objects`,
        null,
        { details: { max_depth: maxDepth } },
      ),
    }
  }
  const { error } = errorAnswer('rest', err, req)
  return {
    // A body read as JSON whose strings core's input rule refuses (a NUL) is a request like any
    // other: 200. Over the limit (413) or in another charset (415), it was never read: its status.
    status: err instanceof ApiError && error.code === 'bad_request' ? 200 : error.status,
    headers: { ...error.headers },
    body: {
      jsonrpc: '2.0',
      id: null,
      error: rpcError(error, typeof req.id === 'string' ? req.id : undefined),
    },
  }
}
