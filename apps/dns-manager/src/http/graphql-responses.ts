import { ApiError, type ErrorCode, renderGraphQLError, statusOf } from '@quartet/core/errors'
import { HotAnswer, type HeaderSink } from '@quartet/core/http'
import type { Response } from 'express'
import { type ExecutionResult, GraphQLError } from 'graphql'

/** The two media types of a GraphQL answer (GraphQL over HTTP), which differ in their status codes. */
export type GraphQLMediaType = 'application/graphql-response+json' | 'application/json'
export const GRAPHQL_RESPONSE = 'application/graphql-response+json'
export const contentTypeOf = (mediaType: GraphQLMediaType) => `${mediaType}; charset=utf-8`

/**
 * The answer's media type, as Yoga chooses it: the first entry of `Accept` (in the order given)
 * that is one of the two, `application/*` or `*\/*` (those choose application/json), in UTF-8.
 * No Accept header, or one that names neither, gets application/json (not Yoga's 406: every
 * answer of ours is JSON, as for REST and JSON-RPC).
 */
export function responseMediaType(accept: string | string[] | undefined): GraphQLMediaType {
  const header = Array.isArray(accept) ? accept.join(',') : accept
  for (const entry of (header ?? '').split(',')) {
    const [type = '', ...params] = entry.split(';').map((p) => p.trim().toLowerCase())
    if (params.some((p) => /^q=0(\.0*)?$/.test(p))) continue
    const charset = params.find((p) => p.startsWith('charset='))
    if (charset !== undefined && charset !== 'charset=utf-8') continue
    if (type === GRAPHQL_RESPONSE) return GRAPHQL_RESPONSE
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return 'application/json'
  }
  return 'application/json'
}

/** Statuses that say the HTTP request itself was not one GraphQL runs (a mutation by GET: 405). */
const HTTP_LEVEL = new Set([405, 413, 415])

/**
 * The status of an answer GraphQL made (GraphQL over HTTP; the gate's refusals keep theirs):
 * 200 whenever execution began (`data` is there, partial or not), in both media types, with the
 * errors' headers (Retry-After) kept. A request error (parse, validation, a limit, variables)
 * is 200 under application/json, which says only that the request was well-formed, and its own
 * status (400) under application/graphql-response+json. An HTTP-level refusal (405) and a 5xx
 * keep theirs in both.
 */
export function answerStatus(
  result: ExecutionResult,
  errors: readonly GraphQLError[],
  mediaType: GraphQLMediaType,
) {
  if (result.data !== undefined) return 200
  const worst = Math.max(
    200,
    ...errors.map((e) => (e.extensions?.http as { status?: number } | undefined)?.status ?? 500),
  )
  if (worst >= 500 || HTTP_LEVEL.has(worst)) return worst
  return mediaType === GRAPHQL_RESPONSE ? worst : 200
}

/** The errors, each carrying the answer's status for Yoga (which answers with the highest). */
export function withAnswerStatus(
  result: ExecutionResult,
  errors: readonly GraphQLError[],
  mediaType: GraphQLMediaType,
): GraphQLError[] {
  const status = answerStatus(result, errors, mediaType)
  return errors.map((e) => {
    const http = (e.extensions?.http ?? {}) as { status?: number; headers?: Record<string, string> }
    if (http.status === status) return e
    return new GraphQLError(e.message, {
      nodes: e.nodes,
      source: e.source,
      positions: e.positions,
      path: e.path,
      extensions: { ...e.extensions, http: { ...http, status } },
    })
  })
}

/** An ApiError as a GraphQL error; `extensions.http` (status, headers) is read by Yoga, not sent. */
export function toGraphQLError(
  err: ApiError,
  requestId?: string,
  at?: Pick<GraphQLError, 'nodes' | 'source' | 'positions' | 'path'>,
): GraphQLError {
  const rendered = renderGraphQLError(err, requestId)
  // No originalError: Yoga masks errors caused by non-GraphQL errors, and our messages are public already.
  return new GraphQLError(rendered.message, {
    ...(at?.nodes ? { nodes: at.nodes } : {}),
    ...(at?.source ? { source: at.source } : {}),
    ...(at?.positions ? { positions: at.positions } : {}),
    ...(at?.path ? { path: at.path } : {}),
    extensions: {
      ...rendered.extensions,
      http: { status: err.status, ...(err.headers ? { headers: err.headers } : {}) },
    },
  })
}

/**
 * A request refused before Yoga runs, in the same shape as every other GraphQL error, with the
 * error's status (the request was refused over HTTP: its method, type, body, credentials), or
 * `status` (a document refused before parsing: as the parser's refusals, documentRefusalStatus).
 */
export function sendError(
  res: Response,
  err: ApiError,
  requestId: string | undefined,
  mediaType: GraphQLMediaType,
  status = err.status,
): void {
  if (err.headers) res.set(err.headers)
  res.set('Content-Type', contentTypeOf(mediaType))
  res.status(status).json(refusal(err, requestId))
}

export function refusal(err: ApiError, requestId: string | undefined): unknown {
  const { message, extensions } = renderGraphQLError(err, requestId)
  const { http: _http, ...shown } = extensions
  return { errors: [{ message, extensions: shown }] }
}

/** sendError's answer on a hot route. */
export function hotRefusal(
  err: ApiError,
  req: { id?: unknown },
  headers: HeaderSink,
  mediaType: GraphQLMediaType,
  status = err.status,
): HotAnswer {
  for (const [name, value] of Object.entries(err.headers ?? {})) headers.setHeader(name, value)
  return new HotAnswer(
    status,
    refusal(err, typeof req.id === 'string' ? req.id : undefined),
    undefined,
    hotType(mediaType),
  )
}

/** A hot answer's media type: core's default is application/json. */
export const hotType = (mediaType: GraphQLMediaType) =>
  mediaType === GRAPHQL_RESPONSE ? GRAPHQL_RESPONSE : undefined

/** The status of a document the gate refused before parsing (its bracket nesting): a request error. */
export const documentRefusalStatus = (mediaType: GraphQLMediaType) =>
  mediaType === GRAPHQL_RESPONSE ? 400 : 200

/** Errors made by graphql-js or Yoga (parse, validation, variable coercion, HTTP rules) have no code of ours. */
const YOGA_STATUS_CODES: Record<number, ErrorCode> = {
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
}

/** Lower-case codes are ours (the one table); Yoga's and graphql-js's are upper case or missing. */
const isOurs = (error: GraphQLError) =>
  typeof error.extensions?.code === 'string' && /^[a-z][a-z_]*$/.test(error.extensions.code)

function causedByGraphQL(error: GraphQLError): boolean {
  let cause: unknown = error.originalError
  while (cause instanceof GraphQLError) cause = cause.originalError
  return cause === undefined || cause === null
}

/**
 * Every error leaves in the service's shape: our code in `extensions.code`, `request_id`, the
 * status from the one table. A client's mistake that graphql-js or Yoga caught is bad_request
 * (or what its HTTP status says); anything unexpected is internal_error with its message hidden.
 * "Did you mean …" hints are dropped: they would describe the schema.
 */
export function normaliseError(error: GraphQLError, requestId: string | undefined): GraphQLError {
  const http = error.extensions?.http as { status?: number; headers?: Record<string, string> } | undefined
  if (isOurs(error)) {
    const code = error.extensions.code as ErrorCode
    // Rebuilt without Yoga's `http.spec` mark (Yoga adds it to parse errors, ours included),
    // which would make it answer 200 where the table says 400.
    return new GraphQLError(error.message, {
      nodes: error.nodes,
      source: error.source,
      positions: error.positions,
      path: error.path,
      extensions: {
        ...error.extensions,
        request_id: error.extensions.request_id ?? requestId,
        http: { status: statusOf(code), ...(http?.headers ? { headers: http.headers } : {}) },
      },
    })
  }
  const unexpected = error.extensions?.unexpected === true || !causedByGraphQL(error)
  const code: ErrorCode = unexpected
    ? 'internal_error'
    : ((http?.status ? YOGA_STATUS_CODES[http.status] : undefined) ?? 'bad_request')
  const message = error.message.replace(/\s*Did you mean .*\?$/s, '')
  return toGraphQLError(
    new ApiError(code, message, undefined, http?.headers ? { headers: http.headers } : undefined),
    requestId,
    error,
  )
}
