import type { DnsOperation as Operation } from './define.ts'

/**
 * The types of the operations' outputs; each root field returns its operation's output object.
 * Held field by field to the operations' output schemas (http/operations/outputs.ts) by
 * test/unit/graphql-output-types.test.ts.
 */
const TYPE_DEFS = `
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
type ZoneFile { zone: String! origin: String! generated_at: String! }
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
type ApiKey {
  id: String! api_key: String! scope: String! subdomain_id: Int created_at: String! last_used_at: String current: Boolean!
}
type ApiKeyList { keys: [ApiKey!]! }
type NewApiKey {
  id: String! api_key: String! api_secret: String! scope: String! subdomain_id: Int created_at: String!
}
type NewApiKeyResult { key: NewApiKey! }
type AcmeChallenge { fqdn: String! value: String! subdomain_id: Int! changed: Boolean! }
type AcmeChallengeResult { challenge: AcmeChallenge! }
`

/**
 * The GraphQL schema (SDL) of the operations: the output types above, and one root field per
 * operation. Served as `GET /graphql/schema.graphql` (graphql.ts), since introspection is off.
 */
export function graphqlSchemaSource(operations: readonly Operation[]): string {
  const fields: Record<'Query' | 'Mutation', string[]> = { Query: [], Mutation: [] }
  for (const op of operations) {
    const kind = op.graphql.kind === 'query' ? 'Query' : 'Mutation'
    // Root fields are nullable, so one failing field (a refused alias) does not null the others.
    fields[kind].push(
      `  "${op.summary.replaceAll('"', "'")}"\n  ${op.graphql.field}${op.graphql.args}: ${op.graphql.type.replace(/!$/, '')}`,
    )
  }
  return `${TYPE_DEFS}\ntype Query {\n${fields.Query.join('\n')}\n}\ntype Mutation {\n${fields.Mutation.join('\n')}\n}\n`
}
