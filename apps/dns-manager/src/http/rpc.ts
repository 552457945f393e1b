import { ApiError, toApiError } from '@quartet/core/errors'
import { HotAnswer, type HeaderSink, type HotRoute } from '@quartet/core/http'
import { requestIp } from '@quartet/core/log'
import { type ErrorRequestHandler, Router, type Request, type Response } from 'express'
import type { IncomingHttpHeaders } from 'node:http'
import type { RateLimitDecision } from '@quartet/core/rate-limit'
import type { Principal } from '../domain/use-cases.ts'
import { type AnswerMemo, keptAnswer, requestKey } from './answer-memo.ts'
import type { DnsOperation as Operation } from './define.ts'
import type { Pipeline } from './pipeline.ts'
import {
  callShape,
  methodOf,
  protocolError,
  RPC_INVALID_REQUEST,
  RPC_METHOD_NOT_FOUND,
  rpcBodyErrorAnswer,
  rpcBytes,
  rpcError,
  type RpcHttpAnswer,
  type RpcResponse,
} from './rpc-messages.ts'

const requestIdOf = (req: Request) => (typeof req.id === 'string' ? req.id : undefined)

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
  // Each operation's JSON-RPC method (its definition's rpc slot: its name).
  const byName = new Map(operations.map((op) => [op.rpc?.method ?? op.name, op]))

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
