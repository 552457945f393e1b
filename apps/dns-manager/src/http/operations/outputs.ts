import { z } from 'zod'

/**
 * What each operation answers (the JSON-RPC result, the GraphQL field, and the REST body without
 * its `success: true`). The GraphQL output types (graphql-schema.ts) are checked against these in
 * test/unit/graphql-output-types.test.ts, and every REST answer parses with them in
 * test/integration/operations.test.ts.
 */
const zTime = z.iso.datetime()
const zInt = z.number().int()

export const ZQuota = z.object({ used: zInt, total: zInt, available: zInt })
export const ZVerifyOutput = z.object({ account: z.object({ api_key: z.string(), quota: ZQuota }) })
export const ZQuotaOutput = z.object({ quota: ZQuota, balance_cents: zInt })

export const ZSubdomain = z.object({
  id: zInt,
  subdomain: z.string(),
  rootdomain: z.string(),
  full_domain: z.string(),
  status: z.enum(['active', 'grace', 'suspended']),
  created_at: zTime,
  updated_at: zTime,
  expires_at: zTime.nullable(),
  never_expires: z.boolean(),
})
export const ZSubdomainPage = z.object({
  subdomains: z.array(ZSubdomain),
  next_cursor: z.string().nullable(),
})
export const ZSubdomainOutput = z.object({ subdomain: ZSubdomain })
export const ZRenewOutput = z.object({ subdomain: ZSubdomain, charged_cents: zInt, balance_cents: zInt })
export const ZDeleted = z.object({ deleted: z.literal(true), id: zInt })
export const ZDeletedKey = z.object({ deleted: z.literal(true), id: z.string() })
export const ZZoneFile = z.object({ zone: z.string(), origin: z.string(), generated_at: zTime })

export const ZDnsRecord = z.object({
  id: zInt,
  name: z.string(),
  type: z.string(),
  content: z.string(),
  ttl: zInt,
  priority: zInt.nullable(),
  weight: zInt.nullable(),
  port: zInt.nullable(),
  flag: zInt.nullable(),
  tag: z.string().nullable(),
  created_at: zTime,
  updated_at: zTime,
})
export const ZDnsRecordPage = z.object({
  dns_records: z.array(ZDnsRecord),
  next_cursor: z.string().nullable(),
})
export const ZDnsRecordOutput = z.object({ dns_record: ZDnsRecord })

export const ZWhoisOutput = z.object({
  whois: z.object({
    domain: z.string(),
    rootdomain: z.string(),
    status: z.enum(['registered', 'grace', 'available', 'reserved']),
    created_at: zTime.nullable(),
    expires_at: zTime.nullable(),
    nameservers: z.array(z.string()),
  }),
})

export const ZSystemOutput = z.object({
  system: z.object({
    version: z.string(),
    provider: z.string(),
    zones: z.array(
      z.object({ name: z.string(), price_cents: zInt, term_years: zInt, never_expires: z.boolean() }),
    ),
    limits: z.object({
      rate_limit_per_minute: zInt,
      rpc_max_batch: zInt,
      ttl_min: zInt,
      ttl_max: zInt,
      ttl_default: zInt,
      record_types: z.array(z.string()),
      max_records_per_subdomain: zInt,
      max_api_keys: zInt,
      per_page_max: zInt,
      renew_window_days: zInt,
      grace_days: zInt,
    }),
    health: z.object({ database: z.string() }),
  }),
})

const zScope = z.enum(['full', 'dyndns', 'acme'])
export const ZApiKeyList = z.object({
  keys: z.array(
    z.object({
      id: z.string(),
      api_key: z.string(),
      scope: zScope,
      subdomain_id: zInt.nullable(),
      created_at: zTime,
      last_used_at: zTime.nullable(),
      current: z.boolean(),
    }),
  ),
})
export const ZNewApiKeyOutput = z.object({
  key: z.object({
    id: z.string(),
    api_key: z.string(),
    api_secret: z.string(),
    scope: zScope,
    subdomain_id: zInt.nullable(),
    created_at: zTime,
  }),
})

export const ZAcmeChallengeOutput = z.object({
  challenge: z.object({ fqdn: z.string(), value: z.string(), subdomain_id: zInt, changed: z.boolean() }),
})
