import { errorAnswer } from '@quartet/core/errors'
import type { HotRoute } from '@quartet/core/http'
import type { Logger } from '@quartet/core/log'
import type { Express, RequestHandler } from 'express'
import { NoSchemaIntrospectionCustomRule, printSchema } from 'graphql'
import { createSchema } from 'graphql-yoga'
import type client from 'prom-client'
import { PER_PAGE_DEFAULT, PER_PAGE_MAX } from '../domain/use-cases.ts'
import type { AnswerMemo } from './answer-memo.ts'
import { graphqlHotRoutes } from './graphql-fast-path.ts'
import { type DocumentLimits, INTROSPECTION_ALLOWANCE } from './graphql-limits.ts'
import { type GraphQLContext, type GraphQLSetup, requestIdOf } from './graphql-request.ts'
import { toGraphQLError } from './graphql-responses.ts'
import { graphqlSchemaSource } from './graphql-schema.ts'
import { createYogaServers } from './graphql-yoga-server.ts'
import type { DnsOperation as Operation } from './define.ts'
import type { Pipeline } from './pipeline.ts'

/**
 * GraphQL adapter (graphql-yoga v5) at `/graphql` and `/api/v1/graphql`: one resolver per
 * operation's GraphQL field, served twice over. Yoga answers behind a gate
 * (graphql-yoga-server.ts); a POST with a plain JSON body is answered before express by the fast
 * path (graphql-fast-path.ts), which parses, measures and validates each distinct document once
 * and answers as Yoga would. Every root field (aliases included) spends one rate-limit point.
 * HTTP batching is off, and there is no CORS, like the REST routes.
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
      fields: new Set(operations.filter((op) => 'per_page' in op.args.shape).map((op) => op.graphql.field)),
      defaultSize: PER_PAGE_DEFAULT,
      maxSize: PER_PAGE_MAX,
    },
    introspection: options.introspection === 'off' ? null : INTROSPECTION_ALLOWANCE,
  }
  const setup: GraphQLSetup = {
    endpoints: options.endpoints,
    logger: options.logger,
    pipeline,
    limits,
    maxTokens: options.maxTokens,
    // Introspection queries nest their brackets 10 deep (their depth is in fragments).
    maxNesting: Math.max(2 * options.maxDepth, limits.introspection ? 16 : 0),
    // Introspection refused at validation too, should a document reach it (checkDocument refuses
    // it first, in words that say where the schema is).
    introspectionRules: options.introspection === 'off' ? [NoSchemaIntrospectionCustomRule] : [],
  }
  const { yogas, gate, bodyErrors } = createYogaServers(schema, setup)
  const { hotRoutes, executions } = graphqlHotRoutes(schema, yogas, { ...setup, memo: options.memo })

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
