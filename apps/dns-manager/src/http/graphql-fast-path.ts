import { ApiError, errorAnswer } from '@quartet/core/errors'
import { HotAnswer, type HotRoute } from '@quartet/core/http'
import { requestIp } from '@quartet/core/log'
import type { RateLimitDecision } from '@quartet/core/rate-limit'
import {
  type DocumentNode,
  type ExecutionResult,
  execute,
  getOperationAST,
  type GraphQLError,
  type GraphQLSchema,
  parse,
  specifiedRules,
  validate,
} from 'graphql'
import { maskError, processRegularResult } from 'graphql-yoga'
import client from 'prom-client'
import type { Principal } from '../domain/use-cases.ts'
import { type AnswerMemo, keptAnswer, requestKey } from './answer-memo.ts'
import { compiledQueryCache, locatedAsGraphQLJs } from './graphql-compiled-queries.ts'
import { checkDocument, checkNesting } from './graphql-limits.ts'
import {
  ADMITTED,
  type Admitted,
  bodyParams,
  type GraphQLContext,
  type GraphQLRequest,
  type GraphQLSetup,
  requestIdOf,
  validHost,
} from './graphql-request.ts'
import type { GraphQLYoga } from './graphql-yoga-server.ts'
import {
  documentRefusalStatus,
  hotRefusal,
  hotType,
  normaliseError,
  responseMediaType,
  withAnswerStatus,
} from './graphql-responses.ts'

/** Documents the fast path keeps parsed and validated, and the longest query text it keeps. */
const MAX_CACHED_DOCUMENTS = 500
const MAX_CACHED_QUERY = 16 * 1024

/**
 * The fast path's hot routes (POST with a plain JSON body, answered before express), and the
 * counter of which executor answered.
 */
export function graphqlHotRoutes(
  schema: GraphQLSchema,
  yogas: Map<string, GraphQLYoga>,
  setup: GraphQLSetup & {
    /** Answers of queries made of cached views alone (answer-memo.ts); none without a views cache. */
    memo?: AnswerMemo<Buffer> | undefined
  },
): { hotRoutes: HotRoute[]; executions: client.Counter<'executor'> } {
  const { pipeline, limits, maxNesting, introspectionRules } = setup
  // The fast path (POST with a plain JSON body, answered before express): each distinct
  // document is parsed, measured and validated once, as Yoga's plugins do it (graphql-yoga-server.ts); a document
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
      document = parse(query, { maxTokens: setup.maxTokens })
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

  const compiledQueries = compiledQueryCache(schema, setup.logger)
  const executions = new client.Counter({
    name: 'dns_manager_graphql_executions_total',
    help: 'GraphQL operations the fast path answered, by executor: memo (a repeated query answered from its kept answer), compiled (graphql-jit, a repeated query), graphql-js, or yoga (everything else)',
    labelNames: ['executor'] as const,
    registers: [],
  })
  for (const executor of ['memo', 'compiled', 'graphql-js', 'yoga']) executions.labels(executor).inc(0)

  const hotRoutes: HotRoute[] = setup.endpoints.map((endpoint) => {
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
        const { memo } = setup
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
          // Yoga answers it, from the parameters the gate checked (onRequestParse in graphql-yoga-server.ts).
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
              if (m !== e) setup.logger.error({ err: e }, 'graphql')
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

  return { hotRoutes, executions }
}
