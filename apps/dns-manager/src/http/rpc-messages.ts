import {
  ApiError,
  type ErrorCode,
  errorAnswer,
  renderJsonRpcError,
  statusOf,
  toApiError,
} from '@quartet/core/errors'
import { jsonBytesOf } from '@quartet/core/json-text'
import type { Logger } from '@quartet/core/log'

// JSON-RPC 2.0's messages as this server writes them: the error codes, error objects, the shape
// of a call, the answer's bytes, and the answers to bodies refused before they are read.

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

export interface RpcError {
  code: number
  message: string
  data?: unknown
}
export interface RpcResponse {
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
export const protocolError = (
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

export const validId = (id: unknown): id is string | number | null =>
  id === null || typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id))

/** A JSON-RPC HTTP answer: status, headers beyond the pipeline's, and the JSON body (none: no body). */
export interface RpcHttpAnswer {
  status: number
  headers: Record<string, string>
  body?: unknown
  /** The body's UTF-8 JSON, when it is made already (a memoised answer). */
  bytes?: Buffer
}

/** A call as JSON-RPC 2.0 has it (an object, `jsonrpc: "2.0"`, a method name, a valid id or none), or its -32600. */
export function callShape(
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

export const methodOf = (call: unknown): string =>
  typeof call === 'object' && call !== null && typeof (call as { method?: unknown }).method === 'string'
    ? (call as { method: string }).method
    : ''

/**
 * The UTF-8 JSON of an answer whose results include cached views (they carry their bytes), with
 * those bytes spliced in: what JSON.stringify writes, without serialising or encoding the rows
 * again. Undefined when no result has kept bytes.
 */
export function rpcBytes(body: unknown): Buffer | undefined {
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
