import { baseConfigShape, type Env, loadConfig, zBool, zInt } from '@quartet/core/config'
import { z } from 'zod'

const list = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim().toLowerCase())
        .filter(Boolean),
    )

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3003, schema: 'dns_manager', appName: 'dns-manager' }),
  /** Where records go: `database` (Postgres only, BIND export), `powerdns` or `cloudflare`. */
  DNS_PROVIDER: z.enum(['database', 'powerdns', 'cloudflare']).default('database'),
  PDNS_API_URL: z.url().default('http://127.0.0.1:8081'),
  PDNS_API_KEY: z.string().default(''),
  PDNS_SERVER_ID: z.string().default('localhost'),
  CLOUDFLARE_API_URL: z.url().default('https://api.cloudflare.com/client/v4'),
  CLOUDFLARE_API_TOKEN: z.string().default(''),
  PROVIDER_TIMEOUT_MS: zInt(5000, 100, 120_000),
  API_KEY_PREFIX: z
    .string()
    .regex(/^[a-z][a-z0-9_]{1,15}$/, 'must be a short lowercase prefix such as dnsm_')
    .default('dnsm_'),
  MAX_API_KEYS: zInt(3, 1, 100),
  RATE_LIMIT_PER_MINUTE: zInt(60, 1, 1_000_000_000),
  RPC_MAX_BATCH: zInt(20, 1, 1000),
  GRAPHQL_MAX_DEPTH: zInt(8, 2, 50),
  GRAPHQL_MAX_FIELDS: zInt(200, 10, 10_000),
  /** Lexical tokens in one GraphQL document; the parser stops past it. */
  GRAPHQL_MAX_TOKENS: zInt(2000, 100, 100_000),
  /** Fields a GraphQL document may return, one inside a page counted once per row (graphql-limits.ts). */
  GRAPHQL_MAX_COST: zInt(20_000, 100, 10_000_000),
  /**
   * Schema introspection (`__schema`, `__type`) for authenticated callers, within its own
   * allowance (graphql-limits.ts), or `off` for everyone.
   */
  GRAPHQL_INTROSPECTION: z.enum(['authenticated', 'off']).default('authenticated'),
  /** Failed authentications (wrong key or secret) per client address, and per API key, per window. */
  AUTH_FAILURES_PER_ADDRESS: zInt(20, 1, 1_000_000),
  AUTH_FAILURES_PER_KEY: zInt(100, 1, 1_000_000),
  AUTH_FAILURE_WINDOW_SEC: zInt(600, 10, 86_400),
  RENEW_WINDOW_DAYS: zInt(30, 0, 3650),
  GRACE_DAYS: zInt(45, 0, 3650),
  MAX_RECORDS_PER_SUBDOMAIN: zInt(100, 1, 100_000),
  RESERVED_LABELS: list('www,mail,ns,ns1,ns2,admin,root,api,localhost,hostmaster,postmaster,abuse,webmaster'),
  /** Allow A/AAAA records in private, loopback, link-local, documentation and reserved ranges. */
  ALLOW_PRIVATE_ADDRESSES: zBool(false),
  NAMESERVERS: list('ns1.example.net,ns2.example.net'),
  /**
   * With Redis, each process caches the credential and account behind an API key until a write
   * replaces the account's version token in Redis; this bounds how long an entry may serve at
   * most (changes made around the service, e.g. by hand in SQL). 0 turns the cache off.
   */
  PRINCIPAL_CACHE_MAX_AGE_MS: zInt(10_000, 0, 3_600_000),
  /** How often the sweeper and the reconcile job run; 0 switches both off. */
  JOBS_INTERVAL_MS: zInt(60_000, 0, 86_400_000),
  /** A write still pending after this long is rolled back by the reconcile job. */
  PENDING_TIMEOUT_MS: zInt(60_000, 1000, 86_400_000),
  /** How often the anti-entropy job compares every zone upstream with the database; 0 switches it off. */
  ANTI_ENTROPY_INTERVAL_MS: zInt(300_000, 0, 86_400_000),

  // --- the back office (web pages for account holders; README "Back office") ---
  /** Who may sign up: anyone (`open`), holders of an operator's invitation (`invite`), nobody (`closed`). */
  REGISTRATION: z.enum(['open', 'invite', 'closed']).default('invite'),
  /** The site as people reach it (Caddy's host); the links in mails start with it. */
  PUBLIC_URL: z
    .url()
    .default('http://dns.localhost')
    .transform((v) => v.replace(/\/+$/, '')),
  /** `smtp://user:pass@host:587` or `smtps://…`; unset: mails are written to the log (said at start). */
  SMTP_URL: z.url().optional(),
  MAIL_FROM: z.string().min(3).default('dns-manager <no-reply@dns.localhost>'),
  /** What a signed-up account starts with. */
  SIGNUP_QUOTA: zInt(2, 0, 100_000),
  SIGNUP_BALANCE_CENTS: zInt(0, 0, 1_000_000_000),
  /** A back-office session ends after this long unused, and 12 hours after sign-in at most. */
  WEB_SESSION_IDLE_MINUTES: zInt(60, 1, 720),
  /** Sign-in and reset attempts per client address, and per account, in each window. */
  SIGNIN_ATTEMPTS_PER_ADDRESS: zInt(20, 1, 1_000_000),
  SIGNIN_ATTEMPTS_PER_ACCOUNT: zInt(10, 1, 1_000_000),
  SIGNIN_WINDOW_SEC: zInt(900, 10, 86_400),
  /** Origins the back office's writes may come from besides PUBLIC_URL (comma-separated). */
  WEB_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((v) =>
      v
        .split(',')
        .map((s) => s.trim().replace(/\/+$/, ''))
        .filter(Boolean),
    ),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (DNS_MANAGER_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'DNS_MANAGER', env })
