import { renderGraphQLError, toApiError } from '@quartet/core/errors'
import type { Express, Request } from 'express'
import {
  type ASTVisitor,
  type FragmentDefinitionNode,
  GraphQLError,
  Kind,
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql'
import { createSchema, createYoga, type Plugin } from 'graphql-yoga'
import type { Principal } from '../domain/service.ts'
import type { Operation } from './operation.ts'
import type { Pipeline } from './pipeline.ts'

/** The types of the operations' outputs; each root field returns its operation's output object. */
const typeDefs = `
type Quota { used: Int! total: Int! available: Int! }
type Account { api_key: String! quota: Quota! }
type VerifyResult { account: Account! }
type QuotaResult { quota: Quota! balance_cents: Int! }
type Subdomain {
  id: Int! subdomain: String! rootdomain: String! full_domain: String! status: String!
  created_at: String! updated_at: String! expires_at: String never_expires: Boolean!
}
type SubdomainPage { subdomains: [Subdomain!]! next_cursor: String }
type SubdomainResult { subdomain: Subdomain! }
type RenewResult { subdomain: Subdomain! charged_cents: Int! balance_cents: Int! }
type Deleted { deleted: Boolean! id: Int! }
type DeletedKey { deleted: Boolean! id: String! }
type ZoneFile { zone: String! generated_at: String! }
type DnsRecord {
  id: Int! name: String! type: String! content: String! ttl: Int! priority: Int weight: Int port: Int
  flag: Int tag: String created_at: String! updated_at: String!
}
type DnsRecordPage { dns_records: [DnsRecord!]! next_cursor: String }
type DnsRecordResult { dns_record: DnsRecord! }
type Whois {
  domain: String! rootdomain: String! status: String! created_at: String expires_at: String nameservers: [String!]!
}
type WhoisResult { whois: Whois! }
type ZoneOffer { name: String! price_cents: Int! term_years: Int! never_expires: Boolean! }
type Limits {
  rate_limit_per_minute: Int! rpc_max_batch: Int! ttl_min: Int! ttl_max: Int! ttl_default: Int!
  record_types: [String!]! max_records_per_subdomain: Int! max_api_keys: Int! per_page_max: Int!
  renew_window_days: Int! grace_days: Int!
}
type Health { database: String! }
type SystemInfo { version: String! provider: String! zones: [ZoneOffer!]! limits: Limits! health: Health! }
type SystemResult { system: SystemInfo! }
type ApiKey { id: String! api_key: String! created_at: String! last_used_at: String current: Boolean! }
type ApiKeyList { keys: [ApiKey!]! }
type NewApiKey { id: String! api_key: String! api_secret: String! created_at: String! }
type NewApiKeyResult { key: NewApiKey! }
`

interface GraphQLContext {
  principal: Principal
}

export function toGraphQLError(err: unknown, requestId?: string): GraphQLError {
  const rendered = renderGraphQLError(toApiError(err), requestId)
  // No originalError: Yoga masks errors caused by non-GraphQL errors, and our messages are public already.
  return new GraphQLError(rendered.message, { extensions: rendered.extensions })
}

/** Depth and field-count limits, checked before anything runs (fragments followed, cycles cut). */
function queryLimits(maxDepth: number, maxFields: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>()
    for (const def of context.getDocument().definitions)
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def)
    const measure = (
      set: SelectionSetNode,
      depth: number,
      seen: Set<string>,
    ): { depth: number; fields: number } => {
      let deepest = depth
      let fields = 0
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          fields++
          if (sel.selectionSet) {
            const inner = measure(sel.selectionSet, depth + 1, seen)
            deepest = Math.max(deepest, inner.depth)
            fields += inner.fields
          }
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          const inner = measure(sel.selectionSet, depth, seen)
          deepest = Math.max(deepest, inner.depth)
          fields += inner.fields
        } else {
          const frag = fragments.get(sel.name.value)
          if (!frag || seen.has(frag.name.value)) continue
          const inner = measure(frag.selectionSet, depth, new Set([...seen, frag.name.value]))
          deepest = Math.max(deepest, inner.depth)
          fields += inner.fields
        }
      }
      return { depth: deepest, fields }
    }
    return {
      OperationDefinition(node) {
        const { depth, fields } = measure(node.selectionSet, 1, new Set())
        if (depth > maxDepth || fields > maxFields)
          context.reportError(
            new GraphQLError(
              depth > maxDepth
                ? `query depth ${depth} exceeds the limit of ${maxDepth}`
                : `query selects ${fields} fields, more than the limit of ${maxFields}`,
              {
                nodes: [node],
                extensions: {
                  code: 'bad_request',
                  http: { status: 400 },
                  details: { depth, fields, max_depth: maxDepth, max_fields: maxFields },
                },
              },
            ),
          )
      },
    }
  }
}

/**
 * GraphQL adapter (graphql-yoga v5) at `/graphql` and `/api/v1/graphql`. Authentication runs
 * once per HTTP request in the context; every root field (aliases included) spends one
 * rate-limit point, so aliases cannot multiply work past the limit. HTTP batching is off.
 */
export function mountGraphQL(
  app: Express,
  operations: readonly Operation[],
  pipeline: Pipeline,
  options: { maxDepth: number; maxFields: number; endpoints: string[] },
): void {
  const resolvers: Record<'Query' | 'Mutation', Record<string, unknown>> = { Query: {}, Mutation: {} }
  const fields: Record<'Query' | 'Mutation', string[]> = { Query: [], Mutation: [] }
  for (const op of operations) {
    const kind = op.graphql.kind === 'query' ? 'Query' : 'Mutation'
    // Root fields are nullable, so one failing field (a refused alias) does not null the others.
    fields[kind].push(
      `  "${op.summary.replaceAll('"', "'")}"\n  ${op.graphql.field}${op.graphql.args}: ${op.graphql.type.replace(/!$/, '')}`,
    )
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
        throw toGraphQLError(err)
      }
    }
  }
  const schema = createSchema<GraphQLContext & { req: Request }>({
    typeDefs: `${typeDefs}\ntype Query {\n${fields.Query.join('\n')}\n}\ntype Mutation {\n${fields.Mutation.join('\n')}\n}\n`,
    resolvers,
  })
  const limits: Plugin = {
    onValidate({ addValidationRule }) {
      addValidationRule(queryLimits(options.maxDepth, options.maxFields))
    },
  }
  for (const endpoint of options.endpoints) {
    const yoga = createYoga<{ req: Request }, GraphQLContext>({
      schema,
      graphqlEndpoint: endpoint,
      graphiql: false,
      landingPage: false,
      batching: false,
      logging: false,
      plugins: [limits],
      // Our errors are GraphQLErrors with public messages; anything else is masked by Yoga.
      maskedErrors: true,
      context: async ({ req }) => {
        try {
          return { principal: await pipeline.authenticate(req.headers, req.ip) }
        } catch (err) {
          throw toGraphQLError(err)
        }
      },
    })
    app.use(endpoint, (req, res) => yoga(req, res, { req }))
  }
}
