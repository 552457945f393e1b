import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { jsonNestsDeeperThan, MAX_JSON_DEPTH, parseInput } from '@quartet/core/validate'
import type { Request } from 'express'
import type { ValidationRule } from 'graphql'
import { z } from 'zod'
import type { Principal } from '../domain/use-cases.ts'
import type { DocumentLimits } from './graphql-limits.ts'
import type { GraphQLMediaType } from './graphql-responses.ts'
import type { Pipeline } from './pipeline.ts'

// What a GraphQL request carries on its way through the gate (graphql-yoga-server.ts) or the fast
// path (graphql-fast-path.ts): its parameters, what the gate found out, the resolvers' context.

/** What the gate found out before Yoga runs: who calls, and the request's checked parameters. */
export interface Admitted {
  principal: Principal
  params: TGraphQLParams
  mediaType: GraphQLMediaType
}
export const ADMITTED = Symbol('graphql.admitted')
export type GraphQLRequest = Request & { [ADMITTED]?: Admitted }

export interface GraphQLContext {
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

export const requestIdOf = (req: Request | undefined) => (typeof req?.id === 'string' ? req.id : undefined)

/** What the Yoga servers and the fast path are built with (createGraphQL's options, worked out). */
export interface GraphQLSetup {
  endpoints: string[]
  logger: Logger
  pipeline: Pipeline
  limits: DocumentLimits
  maxTokens: number
  /** How deep the brackets of a query text may nest before it is parsed. */
  maxNesting: number
  /** Validation rules added to graphql-js's (introspection refused when it is off). */
  introspectionRules: ValidationRule[]
}

/**
 * A Host header a URL can be made of, and nothing more: no path, query, fragment or user part,
 * which would move the URL Yoga makes off its endpoint (a 404 with no body). HTTP/1.0 may send
 * none: Yoga then uses localhost.
 */
export function validHost(host: string | undefined): boolean {
  if (host === undefined) return true
  if (!/^[^/?#@\\\s]+$/.test(host)) return false
  try {
    return new URL(`http://${host}/`).hostname !== ''
  } catch {
    return false
  }
}

const GET_JSON_PARAMS = ['variables', 'extensions'] as const

/**
 * A GET's JSON parameters nested no deeper than core's limit for every JSON body, counted on the
 * text: checked before credentials, as a POST body's depth is (README, "Order of checks").
 */
export function checkGetJsonDepth(req: Request): void {
  if (req.method !== 'GET') return
  for (const name of GET_JSON_PARAMS) {
    const value = (req.query as Record<string, unknown>)[name]
    if (typeof value === 'string' && jsonNestsDeeperThan(value))
      throw new ApiError(
        'bad_request',
        `${name}: nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`,
        { field: name, max_depth: MAX_JSON_DEPTH },
      )
  }
}

/** GET: `query`, `variables` and `extensions` (JSON) from the query string; POST: the JSON body. */
export function requestParams(req: Request): TGraphQLParams {
  if (req.method === 'POST') return bodyParams(req.body)
  checkGetJsonDepth(req)
  const raw: Record<string, unknown> = { ...(req.query as Record<string, unknown>) }
  for (const name of GET_JSON_PARAMS) {
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

/** A POST's parameters: its JSON body, one request (no batching). */
export function bodyParams(body: unknown): TGraphQLParams {
  if (Array.isArray(body))
    throw new ApiError('bad_request', 'one GraphQL request per HTTP request (batching is off)', {
      field: 'body',
    })
  return parseInput(ZGraphQLParams, body, 'body')
}
