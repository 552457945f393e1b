import { ApiError, errorAnswer } from '@quartet/core/errors'
import type { ErrorRequestHandler, RequestHandler } from 'express'
import { type ExecutionResult, type GraphQLError, type GraphQLSchema, parse } from 'graphql'
import { createYoga, type Plugin, type YogaServerInstance } from 'graphql-yoga'
import { checkDocument, checkNesting } from './graphql-limits.ts'
import {
  ADMITTED,
  type GraphQLContext,
  type GraphQLRequest,
  type GraphQLSetup,
  requestIdOf,
  checkGetJsonDepth,
  requestParams,
  validHost,
} from './graphql-request.ts'
import {
  documentRefusalStatus,
  normaliseError,
  responseMediaType,
  sendError,
  toGraphQLError,
  withAnswerStatus,
} from './graphql-responses.ts'

export type GraphQLYoga = YogaServerInstance<{ req: GraphQLRequest }, GraphQLContext>

/**
 * Yoga (graphql-yoga v5), one server an endpoint, behind a gate that answers what needs no
 * document first: the method, the content type, then the credentials (and the budgets of failed
 * secrets), the request's parameters (through core's parseInput, like every other input) and the
 * nesting of the text. Only then does Yoga parse (with a token limit), measure (depth, fields,
 * cost), validate (no introspection) and execute.
 */
export function createYogaServers(
  schema: GraphQLSchema,
  setup: GraphQLSetup,
): { yogas: Map<string, GraphQLYoga>; gate: RequestHandler; bodyErrors: ErrorRequestHandler } {
  const { pipeline, limits, maxNesting, introspectionRules } = setup
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
          const document = parse(source, { ...parseOptions, maxTokens: setup.maxTokens })
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
      if (!setup.endpoints.includes(path ?? ''))
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
      checkGetJsonDepth(req)
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
  for (const endpoint of setup.endpoints) {
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
        warn: (...args: unknown[]) => setup.logger.warn({ args }, 'graphql'),
        error: (...args: unknown[]) => setup.logger.error({ err: args[0] }, 'graphql'),
      },
      plugins,
      // Our errors are GraphQLErrors with public messages; anything else is masked by Yoga.
      maskedErrors: true,
      context: ({ req }) => ({ principal: req[ADMITTED]!.principal, req, spend: pipeline.spend }),
    })
    yogas.set(endpoint, yoga)
  }
  return { yogas, gate, bodyErrors }
}
