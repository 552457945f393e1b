import { ApiError, type ErrorCode, errorAnswer, renderGraphQLError, statusOf } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { RateLimitDecision } from '@quartet/core/rate-limit'
import { jsonNestsDeeperThan, MAX_JSON_DEPTH, parseInput } from '@quartet/core/validate'
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express'
import { HotAnswer, type HeaderSink, type HotRoute } from '@quartet/core/http'
import { requestIp } from '@quartet/core/log'
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  type FieldNode,
  type FragmentDefinitionNode,
  getOperationAST,
  GraphQLError,
  type GraphQLSchema,
  Kind,
  locatedError,
  NoSchemaIntrospectionCustomRule,
  type OperationDefinitionNode,
  parse,
  printSchema,
  type SelectionNode,
  specifiedRules,
  validate,
} from 'graphql'
import type * as GraphQLJit from 'graphql-jit'
import type { CompiledQuery } from 'graphql-jit'
import client from 'prom-client'
import { createSchema, createYoga, maskError, type Plugin, processRegularResult } from 'graphql-yoga'
import { z } from 'zod'
import { PER_PAGE_DEFAULT, PER_PAGE_MAX, type Principal } from '../domain/service.ts'
import {
  checkDocument,
  checkNesting,
  type DocumentLimits,
  INTROSPECTION_ALLOWANCE,
} from './graphql-limits.ts'
import { graphqlSchemaSource } from './graphql-schema.ts'
import { type AnswerMemo, keptAnswer, requestKey } from './answer-memo.ts'
import type { Operation } from './operation.ts'
import type { Pipeline } from './pipeline.ts'

/** What the gate found out before Yoga runs: who calls, and the request's checked parameters. */
interface Admitted {
  principal: Principal
  params: TGraphQLParams
  mediaType: GraphQLMediaType
}
const ADMITTED = Symbol('graphql.admitted')
type GraphQLRequest = Request & { [ADMITTED]?: Admitted }

interface GraphQLContext {
  principal: Principal
  req: GraphQLRequest
  /** Takes a root field's rate-limit point (the pipeline's spend, or decisions taken already). */
  spend: Pipeline['spend']
  /** What each root field answered, when the answer may be memoised (the fast path's queries). */
  results?: unknown[]
}

/** A GraphQL request's parameters (GraphQL over HTTP), as JSON body fields or GET query parameters. */
export const ZGraphQLParams = z.strictObject({
  query: z.string().min(1, 'is required'),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
  extensions: z.record(z.string(), z.unknown()).nullish(),
})
export type TGraphQLParams = z.infer<typeof ZGraphQLParams>

const requestIdOf = (req: Request | undefined) => (typeof req?.id === 'string' ? req.id : undefined)

/** The two media types of a GraphQL answer (GraphQL over HTTP), which differ in their status codes. */
export type GraphQLMediaType = 'application/graphql-response+json' | 'application/json'
const GRAPHQL_RESPONSE = 'application/graphql-response+json'
const contentTypeOf = (mediaType: GraphQLMediaType) => `${mediaType}; charset=utf-8`

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
function answerStatus(result: ExecutionResult, errors: readonly GraphQLError[], mediaType: GraphQLMediaType) {
  if (result.data !== undefined) return 200
  const worst = Math.max(
    200,
    ...errors.map((e) => (e.extensions?.http as { status?: number } | undefined)?.status ?? 500),
  )
  if (worst >= 500 || HTTP_LEVEL.has(worst)) return worst
  return mediaType === GRAPHQL_RESPONSE ? worst : 200
}

/** The errors, each carrying the answer's status for Yoga (which answers with the highest). */
function withAnswerStatus(
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
 * `status` (a document refused before parsing: as the parser's refusals, below).
 */
function sendError(
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

function refusal(err: ApiError, requestId: string | undefined): unknown {
  const { message, extensions } = renderGraphQLError(err, requestId)
  const { http: _http, ...shown } = extensions
  return { errors: [{ message, extensions: shown }] }
}

/** sendError's answer on a hot route. */
function hotRefusal(
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
const hotType = (mediaType: GraphQLMediaType) =>
  mediaType === GRAPHQL_RESPONSE ? GRAPHQL_RESPONSE : undefined

/** The status of a document the gate refused before parsing (its bracket nesting): a request error. */
const documentRefusalStatus = (mediaType: GraphQLMediaType) => (mediaType === GRAPHQL_RESPONSE ? 400 : 200)

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
function normaliseError(error: GraphQLError, requestId: string | undefined): GraphQLError {
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

/**
 * GraphQL adapter (graphql-yoga v5) at `/graphql` and `/api/v1/graphql`.
 *
 * A gate in front of Yoga answers what needs no document first: the method, the content type,
 * then the credentials (and the budgets of failed secrets), the request's parameters (through
 * core's parseInput, like every other input) and the nesting of the text. Only then does Yoga
 * parse (with a token limit), measure (depth, fields, cost), validate (no introspection) and
 * execute. Every root field (aliases included) spends one rate-limit point. HTTP batching is off,
 * and there is no CORS, like the REST routes.
 */
export function createGraphQL(
  operations: readonly Operation[],
  pipeline: Pipeline,
  options: {
    maxDepth: number
    maxFields: number
    maxTokens: number
    maxCost: number
    /** Introspection for authenticated callers (every caller that reaches the parser), or off. */
    introspection: 'authenticated' | 'off'
    endpoints: string[]
    logger: Logger
    /** Answers of queries made of cached views alone (answer-memo.ts); none without a views cache. */
    memo?: AnswerMemo<Buffer> | undefined
  },
): {
  mount(app: Express): void
  hotRoutes: HotRoute[]
  register(target: client.Registry): void
} {
  const resolvers: Record<'Query' | 'Mutation', Record<string, unknown>> = { Query: {}, Mutation: {} }
  for (const op of operations) {
    const kind = op.graphql.kind === 'query' ? 'Query' : 'Mutation'
    resolvers[kind][op.graphql.field] = async (
      _parent: unknown,
      args: Record<string, unknown>,
      ctx: GraphQLContext,
    ) => {
      try {
        await ctx.spend(ctx.principal)
        // Optional GraphQL arguments given as null mean "not given".
        const input = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null))
        const result = await pipeline.run(op, ctx.principal, input)
        ctx.results?.push(result)
        return result
      } catch (err) {
        // errorAnswer logs it as the REST pipeline would (5xx with the cause).
        throw toGraphQLError(errorAnswer('rest', err, ctx.req).error, requestIdOf(ctx.req))
      }
    }
  }
  const schema = createSchema<GraphQLContext>({ typeDefs: graphqlSchemaSource(operations), resolvers })

  const limits: DocumentLimits = {
    maxDepth: options.maxDepth,
    maxFields: options.maxFields,
    maxCost: options.maxCost,
    pages: {
      fields: new Set(
        operations
          .filter((op) => 'per_page' in ((op.input as z.ZodObject).shape ?? {}))
          .map((op) => op.graphql.field),
      ),
      defaultSize: PER_PAGE_DEFAULT,
      maxSize: PER_PAGE_MAX,
    },
    introspection: options.introspection === 'off' ? null : INTROSPECTION_ALLOWANCE,
  }
  // Introspection queries nest their brackets 10 deep (their depth is in fragments).
  const maxNesting = Math.max(2 * options.maxDepth, limits.introspection ? 16 : 0)
  // Introspection refused at validation too, should a document reach it (checkDocument refuses
  // it first, in words that say where the schema is).
  const introspectionRules = options.introspection === 'off' ? [NoSchemaIntrospectionCustomRule] : []

  const plugins: Array<Plugin<GraphQLContext, { req: GraphQLRequest }>> = [
    {
      // The parameters the gate checked; Yoga's own body and query-string parsers never run.
      onRequestParse({ serverContext, setRequestParser }) {
        const admitted = serverContext.req[ADMITTED]
        if (!admitted) return
        const { query, variables, operationName, extensions } = admitted.params
        setRequestParser(() => ({
          query,
          ...(variables ? { variables } : {}),
          ...(operationName ? { operationName } : {}),
          ...(extensions ? { extensions } : {}),
        }))
      },
    },
    {
      // The parser stops past maxTokens; a parsed document past a limit never reaches validation.
      onParse({ setParseFn }) {
        setParseFn((source, parseOptions) => {
          const document = parse(source, { ...parseOptions, maxTokens: options.maxTokens })
          try {
            checkDocument(document, limits)
          } catch (err) {
            throw toGraphQLError(err as ApiError)
          }
          return document
        })
      },
      onValidate({ addValidationRule }) {
        for (const rule of introspectionRules) addValidationRule(rule)
      },
    },
    {
      onResultProcess({ result, setResult, serverContext }) {
        if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return
        const requestId = requestIdOf(serverContext.req)
        const mediaType = serverContext.req[ADMITTED]?.mediaType ?? 'application/json'
        const errors = result.errors.map((e) => normaliseError(e as GraphQLError, requestId))
        setResult({ ...result, errors: withAnswerStatus(result as ExecutionResult, errors, mediaType) })
      },
    },
  ]

  /** Malformed or oversized JSON bodies (express.json runs app-wide), in the GraphQL shape. */
  const bodyErrors: ErrorRequestHandler = (err, req, res, _next) => {
    sendError(
      res,
      errorAnswer('rest', err, req).error,
      requestIdOf(req),
      responseMediaType(req.headers.accept),
    )
  }

  const gate: RequestHandler = async (req, res, next) => {
    const mediaType = responseMediaType(req.headers.accept)
    let refusalStatus: number | undefined
    try {
      // Yoga makes a URL of the Host header: one that is no host (`%00`, a port past 65535)
      // made it throw, a 500 with its stack trace as text.
      if (!validHost(req.headers.host))
        throw new ApiError('bad_request', 'the Host header is not a valid host', { field: 'host' })
      // Express matched the mount path ignoring case and what follows it; Yoga answers only its
      // endpoint exactly, and anything else with a bodiless 404.
      const path = req.originalUrl.split('?')[0]
      if (!options.endpoints.includes(path ?? ''))
        throw new ApiError('not_found', `no route for ${req.method} ${path}`)
      if (req.method === 'OPTIONS') {
        // No CORS headers: like the REST routes, /graphql is not for other origins' pages.
        res.status(204).set('Allow', 'GET, POST').end()
        return
      }
      if (req.method !== 'GET' && req.method !== 'POST')
        throw new ApiError('method_not_allowed', 'GraphQL takes GET and POST', undefined, {
          headers: { Allow: 'GET, POST' },
        })
      if (req.method === 'POST') {
        const json = req.is('application/json')
        if (json === null) throw new ApiError('bad_request', 'a POST needs a JSON body')
        if (json === false)
          throw new ApiError(
            'unsupported_media_type',
            'send the GraphQL request as JSON (Content-Type: application/json)',
          )
      }
      // Yoga makes its URL of express's `req.protocol` too, which a trusted proxy's
      // X-Forwarded-Proto sets to any text (`J#~` was a 500); and of the Host (checked above, and
      // absent only from HTTP/1.0).
      Object.defineProperty(req, 'protocol', { value: req.protocol === 'https' ? 'https' : 'http' })
      req.headers.host ??= 'localhost'
      const principal = await pipeline.authenticate(req.headers, req.ip)
      const params = requestParams(req)
      refusalStatus = documentRefusalStatus(mediaType)
      checkNesting(params.query, maxNesting)
      ;(req as GraphQLRequest)[ADMITTED] = { principal, params, mediaType }
      // The media type chosen above, for Yoga: it would answer 406 to Accept values naming neither.
      req.headers.accept = mediaType
      next()
    } catch (err) {
      sendError(res, errorAnswer('rest', err, req).error, requestIdOf(req), mediaType, refusalStatus)
    }
  }

  const yogas = new Map<string, ReturnType<typeof createYoga<{ req: GraphQLRequest }, GraphQLContext>>>()
  for (const endpoint of options.endpoints) {
    const yoga = createYoga<{ req: GraphQLRequest }, GraphQLContext>({
      schema,
      graphqlEndpoint: endpoint,
      graphiql: false,
      landingPage: false,
      batching: false,
      cors: false,
      logging: {
        debug: () => {},
        info: () => {},
        warn: (...args: unknown[]) => options.logger.warn({ args }, 'graphql'),
        error: (...args: unknown[]) => options.logger.error({ err: args[0] }, 'graphql'),
      },
      plugins,
      // Our errors are GraphQLErrors with public messages; anything else is masked by Yoga.
      maskedErrors: true,
      context: ({ req }) => ({ principal: req[ADMITTED]!.principal, req, spend: pipeline.spend }),
    })
    yogas.set(endpoint, yoga)
  }

  // The fast path (POST with a plain JSON body, answered before express): each distinct
  // document is parsed, measured and validated once, as Yoga's plugins above do it; a document
  // that passes all of it is executed here with graphql-js, and its result goes through what
  // Yoga does to a result (error masking, normaliseError, Yoga's own status and serialisation).
  // Any other document (a syntax error, over a limit, invalid, no operation to run) goes to
  // Yoga, which answers it.
  const validationRules = [...specifiedRules, ...introspectionRules]
  const documents = new Map<string, DocumentNode | null>()
  const prepared = (query: string): DocumentNode | null => {
    const known = documents.get(query)
    if (known !== undefined) {
      // Most recently used last: the first key is the one to drop.
      documents.delete(query)
      documents.set(query, known)
      return known
    }
    let document: DocumentNode | null
    try {
      document = parse(query, { maxTokens: options.maxTokens })
      checkDocument(document, limits)
      if (validate(schema, document, validationRules).length > 0) document = null
    } catch {
      document = null
    }
    if (query.length <= MAX_CACHED_QUERY) {
      documents.set(query, document)
      if (documents.size > MAX_CACHED_DOCUMENTS) documents.delete(documents.keys().next().value!)
    }
    return document
  }

  const compiledQueries = compiledQueryCache(schema, options.logger)
  const executions = new client.Counter({
    name: 'dns_manager_graphql_executions_total',
    help: 'GraphQL operations the fast path answered, by executor: memo (a repeated query answered from its kept answer), compiled (graphql-jit, a repeated query), graphql-js, or yoga (everything else)',
    labelNames: ['executor'] as const,
    registers: [],
  })
  for (const executor of ['memo', 'compiled', 'graphql-js', 'yoga']) executions.labels(executor).inc(0)

  const hotRoutes: HotRoute[] = options.endpoints.map((endpoint) => {
    const yoga = yogas.get(endpoint)!
    return {
      path: endpoint,
      method: 'POST',
      body: 'json',
      async handle(req, headers, _params, body) {
        // As app.ts sets for every answer of the three call styles, errors included.
        headers.setHeader('Cache-Control', 'no-store')
        const request = req as GraphQLRequest
        const requestId = requestIdOf(request)
        const mediaType = responseMediaType(req.headers.accept)
        const jsonType = hotType(mediaType)
        // The same body, answered before from cached views alone that are still the ones it
        // would read (its parameters passed every check then): the same answer, once its points
        // are spent (with authentication's kv command when it can: pipeline.ts, `admit`). A
        // refused point runs the query as usual, with the decisions taken (each root field
        // refused or served as it would be).
        const { memo } = options
        const memoKey =
          memo && typeof body === 'object' && body !== null && !Array.isArray(body)
            ? requestKey(body)
            : undefined
        let principal: Principal
        let prepaid: RateLimitDecision[] | null = null
        try {
          // The gate's checks, in its order (the path, method and content type are the route's).
          if (!validHost(req.headers.host))
            throw new ApiError('bad_request', 'the Host header is not a valid host', { field: 'host' })
          if (memoKey === undefined) principal = await pipeline.authenticate(req.headers, requestIp(req))
          else
            ({ principal, prepaid } = await pipeline.admit(req.headers, requestIp(req), (credentialId) =>
              memo!.pointsOf(credentialId, memoKey),
            ))
        } catch (err) {
          return hotRefusal(errorAnswer('rest', err, request).error, request, headers, mediaType)
        }
        let spend = pipeline.spend
        if (memoKey !== undefined) {
          const kept = await keptAnswer(memo!, pipeline, principal, memoKey, prepaid)
          if ('answer' in kept) {
            executions.labels('memo').inc()
            return new HotAnswer(200, undefined, kept.answer, jsonType)
          }
          spend = kept.spend
        }
        let admitted: Admitted
        let refusalStatus: number | undefined
        try {
          const params = bodyParams(body)
          refusalStatus = documentRefusalStatus(mediaType)
          checkNesting(params.query, maxNesting)
          admitted = { principal, params, mediaType }
        } catch (err) {
          return hotRefusal(
            errorAnswer('rest', err, request).error,
            request,
            headers,
            mediaType,
            refusalStatus,
          )
        }
        const document = prepared(admitted.params.query)
        let response: globalThis.Response
        // Which operation runs is Yoga's executor's to say when it is not plain (an unknown
        // name, several operations and none named): its message differs from graphql-js's.
        // A subscription too (the schema has none): Yoga's executor says so in its own words.
        const operation = document && getOperationAST(document, admitted.params.operationName)
        if (document === null || !operation || operation.operation === 'subscription') {
          // Yoga answers it, from the parameters the gate checked (onRequestParse above).
          request[ADMITTED] = admitted
          executions.labels('yoga').inc()
          response = await yoga.fetch(
            `http://localhost${endpoint}`,
            { method: 'POST', headers: { 'content-type': 'application/json', accept: mediaType } },
            { req: request },
          )
        } else {
          const { variables, operationName } = admitted.params
          const memoised = memoKey !== undefined && operation.operation === 'query'
          const contextValue: GraphQLContext = {
            principal: admitted.principal,
            req: request,
            spend,
            ...(memoised ? { results: [] } : {}),
          }
          const run = () =>
            execute({
              schema,
              document,
              contextValue,
              ...(variables ? { variableValues: variables } : {}),
              ...(operationName ? { operationName } : {}),
            }) as Promise<ExecutionResult>
          const compiled =
            operation.operation === 'query' ? compiledQueries.get(document, operationName) : null
          let result = compiled ? await compiled.query(undefined, contextValue, variables ?? {}) : await run()
          // No data: the request failed before any resolver ran (its variables); graphql-js words that.
          if (compiled && result.data === undefined) result = await run()
          // Errors as graphql-js makes them: located at their field nodes, listed before the data.
          else if (compiled && result.errors?.length)
            result = {
              errors: result.errors.map((e) => locatedAsGraphQLJs(e, document, operation)),
              data: result.data,
            }
          executions.labels(compiled && result.data !== undefined ? 'compiled' : 'graphql-js').inc()
          // No error and no extensions: Yoga answers 200 with the result as JSON.stringify writes it.
          if (!result.errors?.length && result.extensions === undefined) {
            const made = () => {
              const bytes = Buffer.from(JSON.stringify(result))
              return { answer: bytes, size: bytes.length }
            }
            const kept = memoised
              ? memo!.keep(admitted.principal, memoKey, contextValue.results!, made)
              : undefined
            return new HotAnswer(200, undefined, kept ?? JSON.stringify(result), jsonType)
          }
          if (result.errors?.length) {
            // Yoga's masking (maskedErrors: true), then our onResultProcess.
            const masked = result.errors.map((e) => {
              const m = maskError(e, 'Unexpected error.')
              if (m !== e) options.logger.error({ err: e }, 'graphql')
              return m as GraphQLError
            })
            const errors = masked.map((e) => normaliseError(e, requestId))
            result = { ...result, errors: withAnswerStatus(result, errors, mediaType) }
          }
          response = processRegularResult(result, { Response } as never, mediaType) as globalThis.Response
        }
        response.headers.forEach((value, name) => {
          if (name !== 'content-type' && name !== 'content-length') headers.setHeader(name, value)
        })
        return new HotAnswer(response.status, undefined, await response.text(), jsonType)
      },
      bodyError(err, req, headers) {
        headers.setHeader('Cache-Control', 'no-store')
        return hotRefusal(
          errorAnswer('rest', err, req).error,
          req,
          headers,
          responseMediaType(req.headers.accept),
        )
      },
    } satisfies HotRoute
  })

  return {
    hotRoutes,
    register(target) {
      target.registerMetric(executions)
    },
    mount(app) {
      // The SDL tools load (graphql-codegen, an IDE's schema file), printed from the schema this
      // server runs; public, like this README's copy of it.
      const sdl = printSchema(schema)
      for (const endpoint of options.endpoints)
        app.get(`${endpoint}/schema.graphql`, (_req, res) => {
          res.set('Cache-Control', 'public, max-age=300')
          res.type('text/plain; charset=utf-8').send(sdl)
        })
      for (const endpoint of options.endpoints) {
        const yoga = yogas.get(endpoint)!
        const run: RequestHandler = (req, res) => yoga(req, res, { req })
        app.use(endpoint, bodyErrors, gate, run)
      }
    },
  }
}

/**
 * Query operations the fast path has seen before, compiled by graphql-jit (as Mercurius does for
 * repeated queries): the executor graphql-js builds per field (an info object, argument
 * coercion, promise checks, the completion of each value) cost more than the reads themselves
 * for a page of 50 subdomains. graphql-jit is loaded with the first query (not at start), and a
 * query is compiled on its second use; until then, and if it cannot be loaded or compiled,
 * graphql-js runs it. Mutations stay on graphql-js, whose serial execution they rely on.
 */
function compiledQueryCache(schema: GraphQLSchema, logger: Logger) {
  let jit: typeof GraphQLJit | undefined
  let loading: Promise<void> | undefined
  const byDocument = new WeakMap<DocumentNode, Map<string, CompiledQuery | 'seen' | 'unsupported'>>()
  return {
    get(document: DocumentNode, operationName: string | null | undefined): CompiledQuery | null {
      let forDocument = byDocument.get(document)
      if (!forDocument) byDocument.set(document, (forDocument = new Map()))
      const key = operationName ?? ''
      const known = forDocument.get(key)
      if (known === undefined) {
        forDocument.set(key, 'seen')
        loading ??= import('graphql-jit').then(
          (module) => {
            jit = module
          },
          (err: unknown) =>
            logger.warn({ err }, 'graphql-jit could not be loaded; queries run on graphql-js'),
        )
        return null
      }
      if (known !== 'seen') return known === 'unsupported' ? null : known
      if (!jit) return null
      let usable: CompiledQuery | 'unsupported' = 'unsupported'
      try {
        const compiled = jit.compileQuery(schema, document, operationName ?? undefined)
        if (jit.isCompiledQuery(compiled)) usable = compiled
      } catch (err) {
        logger.warn({ err }, 'graphql-jit could not compile a query; it runs on graphql-js')
      }
      forDocument.set(key, usable)
      return usable === 'unsupported' ? null : usable
    },
  }
}

/**
 * A compiled query's error as graphql-js reports it: graphql-js wraps what a resolver threw with
 * locatedError at the field nodes of its path (graphql-jit leaves a thrown GraphQLError without
 * locations). The nodes are those under the path's response keys, through fragments.
 */
function locatedAsGraphQLJs(
  error: GraphQLError,
  document: DocumentNode,
  operation: OperationDefinitionNode,
): GraphQLError {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d)
  const fieldsWithKey = (selections: readonly SelectionNode[], key: string, seen: Set<string>): FieldNode[] =>
    selections.flatMap((selection) => {
      if (selection.kind === Kind.FIELD)
        return (selection.alias ?? selection.name).value === key ? [selection] : []
      if (selection.kind === Kind.INLINE_FRAGMENT)
        return fieldsWithKey(selection.selectionSet.selections, key, seen)
      const fragment = fragments.get(selection.name.value)
      if (!fragment || seen.has(fragment.name.value)) return []
      return fieldsWithKey(fragment.selectionSet.selections, key, new Set([...seen, fragment.name.value]))
    })
  const path = error.path ?? []
  let nodes: FieldNode[] = []
  let selections: Array<readonly SelectionNode[]> = [operation.selectionSet.selections]
  for (const key of path) {
    if (typeof key === 'number') continue
    nodes = selections.flatMap((list) => fieldsWithKey(list, key, new Set()))
    selections = nodes.flatMap((node) => (node.selectionSet ? [node.selectionSet.selections] : []))
  }
  return locatedError(error.originalError ?? error, nodes, path)
}

/** Documents the fast path keeps parsed and validated, and the longest query text it keeps. */
const MAX_CACHED_DOCUMENTS = 500
const MAX_CACHED_QUERY = 16 * 1024

/**
 * A Host header a URL can be made of, and nothing more: no path, query, fragment or user part,
 * which would move the URL Yoga makes off its endpoint (a 404 with no body). HTTP/1.0 may send
 * none: Yoga then uses localhost.
 */
function validHost(host: string | undefined): boolean {
  if (host === undefined) return true
  if (!/^[^/?#@\\\s]+$/.test(host)) return false
  try {
    return new URL(`http://${host}/`).hostname !== ''
  } catch {
    return false
  }
}

/** GET: `query`, `variables` and `extensions` (JSON) from the query string; POST: the JSON body. */
function requestParams(req: Request): TGraphQLParams {
  if (req.method === 'POST') return bodyParams(req.body)
  const raw: Record<string, unknown> = { ...(req.query as Record<string, unknown>) }
  for (const name of ['variables', 'extensions'] as const) {
    const value = raw[name]
    if (value === '') delete raw[name]
    if (typeof value !== 'string' || value === '') continue
    if (jsonNestsDeeperThan(value))
      throw new ApiError(
        'bad_request',
        `${name}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`,
        { field: name, max_depth: MAX_JSON_DEPTH },
      )
    try {
      raw[name] = JSON.parse(value)
    } catch {
      throw new ApiError('bad_request', `${name}: is not valid JSON`, { field: name })
    }
  }
  return parseInput(ZGraphQLParams, raw, 'query')
}

/** A POST's parameters: its JSON body, one request (no batching). */
function bodyParams(body: unknown): TGraphQLParams {
  if (Array.isArray(body))
    throw new ApiError('bad_request', 'one GraphQL request per HTTP request (batching is off)', {
      field: 'body',
    })
  return parseInput(ZGraphQLParams, body, 'body')
}
