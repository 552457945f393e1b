import { ApiError, type ErrorCode, errorAnswer, renderGraphQLError, statusOf } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { parseInput } from '@quartet/core/validate'
import type { ErrorRequestHandler, Express, Request, RequestHandler, Response } from 'express'
import { GraphQLError, NoSchemaIntrospectionCustomRule, parse } from 'graphql'
import { createSchema, createYoga, type Plugin } from 'graphql-yoga'
import { z } from 'zod'
import { PER_PAGE_DEFAULT, PER_PAGE_MAX, type Principal } from '../domain/service.ts'
import { checkDocument, checkNesting, type DocumentLimits } from './graphql-limits.ts'
import { graphqlSchemaSource } from './graphql-schema.ts'
import type { Operation } from './operation.ts'
import type { Pipeline } from './pipeline.ts'

/** What the gate found out before Yoga runs: who calls, and the request's checked parameters. */
interface Admitted {
  principal: Principal
  params: TGraphQLParams
}
const ADMITTED = Symbol('graphql.admitted')
type GraphQLRequest = Request & { [ADMITTED]?: Admitted }

interface GraphQLContext {
  principal: Principal
  req: GraphQLRequest
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

/** A request refused before Yoga runs, in the same shape as every other GraphQL error. */
function sendError(res: Response, err: ApiError, requestId: string | undefined): void {
  const { message, extensions } = renderGraphQLError(err, requestId)
  const { http: _http, ...shown } = extensions
  if (err.headers) res.set(err.headers)
  res.status(err.status).json({ errors: [{ message, extensions: shown }] })
}

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
export function mountGraphQL(
  app: Express,
  operations: readonly Operation[],
  pipeline: Pipeline,
  options: {
    maxDepth: number
    maxFields: number
    maxTokens: number
    maxCost: number
    endpoints: string[]
    logger: Logger
  },
): void {
  const resolvers: Record<'Query' | 'Mutation', Record<string, unknown>> = { Query: {}, Mutation: {} }
  for (const op of operations) {
    const kind = op.graphql.kind === 'query' ? 'Query' : 'Mutation'
    resolvers[kind][op.graphql.field] = async (
      _parent: unknown,
      args: Record<string, unknown>,
      ctx: GraphQLContext,
    ) => {
      try {
        await pipeline.spend(ctx.principal)
        // Optional GraphQL arguments given as null mean "not given".
        const input = Object.fromEntries(Object.entries(args).filter(([, v]) => v !== null))
        return await pipeline.run(op, ctx.principal, input)
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
  }
  const maxNesting = 2 * options.maxDepth

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
      // The schema is in the README; introspection would need its own depth allowance.
      onValidate({ addValidationRule }) {
        addValidationRule(NoSchemaIntrospectionCustomRule)
      },
    },
    {
      onResultProcess({ result, setResult, serverContext }) {
        if (Array.isArray(result) || !('errors' in result) || !result.errors?.length) return
        const requestId = requestIdOf(serverContext.req)
        setResult({
          ...result,
          errors: result.errors.map((e) => normaliseError(e as GraphQLError, requestId)),
        })
      },
    },
  ]

  /** Malformed or oversized JSON bodies (express.json runs app-wide), in the GraphQL shape. */
  const bodyErrors: ErrorRequestHandler = (err, req, res, _next) => {
    sendError(res, errorAnswer('rest', err, req).error, requestIdOf(req))
  }

  const gate: RequestHandler = async (req, res, next) => {
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
      checkNesting(params.query, maxNesting)
      ;(req as GraphQLRequest)[ADMITTED] = { principal, params }
      // One answer type, as for REST and JSON-RPC: Yoga would answer 406 to other Accept values.
      req.headers.accept = 'application/json'
      next()
    } catch (err) {
      sendError(res, errorAnswer('rest', err, req).error, requestIdOf(req))
    }
  }

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
      context: ({ req }) => ({ principal: req[ADMITTED]!.principal, req }),
    })
    const run: RequestHandler = (req, res) => yoga(req, res, { req })
    app.use(endpoint, bodyErrors, gate, run)
  }
}

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
  if (req.method === 'POST') {
    const body = req.body as unknown
    if (Array.isArray(body))
      throw new ApiError('bad_request', 'one GraphQL request per HTTP request (batching is off)', {
        field: 'body',
      })
    return parseInput(ZGraphQLParams, body, 'body')
  }
  const raw: Record<string, unknown> = { ...(req.query as Record<string, unknown>) }
  for (const name of ['variables', 'extensions'] as const) {
    const value = raw[name]
    if (value === '') delete raw[name]
    if (typeof value !== 'string' || value === '') continue
    try {
      raw[name] = JSON.parse(value)
    } catch {
      throw new ApiError('bad_request', `${name}: is not valid JSON`, { field: name })
    }
  }
  return parseInput(ZGraphQLParams, raw, 'query')
}
