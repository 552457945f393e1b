import { databaseReadiness } from '@quartet/core/db'
import { type Clock, systemClock } from '@quartet/core/clock'
import { createHttpApp } from '@quartet/core/http'
import type { KeyValueStore } from '@quartet/core/kv'
import type { Logger } from '@quartet/core/log'
import { serveOpenApi } from '@quartet/core/openapi'
import { operationsDocument } from '@quartet/core/operation/openapi'
import { createRateLimiter } from '@quartet/core/rate-limit'
import { type ErrorRequestHandler, type Express, Router } from 'express'
import { z } from 'zod'
import type { TConfig } from './config.ts'
import { createFailedSecretGuard } from './domain/failed-secrets.ts'
import type { DnsProvider } from './domain/provider.ts'
import { bindUseCases, type UseCases, VERSION } from './domain/use-cases.ts'
import { dyndnsRouter } from './http/dyndns.ts'
import { createGraphQL } from './http/graphql.ts'
import { createPipeline } from './http/pipeline.ts'
import { dnsOperations as operations } from './http/operations.ts'
import { mountRest, restHotRoutes } from './http/rest.ts'
import type { RpcHttpAnswer } from './http/rpc-messages.ts'
import { rpcBodyErrors, rpcHotRoutes, rpcRouter } from './http/rpc.ts'
import { answerMemos } from './http/answer-memo.ts'
import { createProvider } from './providers/index.ts'
import { serializePerZone } from './providers/serialized.ts'
import type { Db } from './store/db.ts'
import { createRepository } from './store/repository.ts'
import { cachedCredentialLookup, createPrincipalVersions, versionedStores } from './store/principal-cache.ts'
import { cachedViews } from './store/view-cache.ts'
import { driftMetrics } from './http/drift-metrics.ts'
import { SESSION_COOKIE } from './http/back-office/auth.ts'
import { backOfficeOperations, registerBackOffice } from './http/back-office/register.ts'
import { bindPeopleUseCases } from './domain/people.ts'
import type { Mailer } from './domain/ports.ts'
import { createMailer } from './mail/mailer.ts'
import { webHelmetOptions } from '@quartet/core/web'

export interface AppDeps {
  config: TConfig
  logger: Logger
  db: Db
  kv: KeyValueStore
  /** Defaults to the one DNS_PROVIDER names. */
  provider?: DnsProvider
  clock?: Clock
  /**
   * Cache credentials and accounts per process (PRINCIPAL_CACHE_MAX_AGE_MS). Only sound when
   * every process that writes them shares this kv: main.ts turns it on with Redis, not with the
   * in-process memory kv, which a CLI run cannot reach. Writes replace version tokens either way.
   */
  cachePrincipals?: boolean
  /** Called when an upstream call's outcome is unknown and RRsets were marked for repair (main.ts runs the repair job soon). */
  onUnknownOutcome?: () => void
  /** The back office's mail; defaults to SMTP_URL's transport, or the log. */
  mailer?: Mailer
}

export interface DnsManager {
  app: Express
  useCases: UseCases
}

const PREFIXES = ['', '/api/v1']

/** The app and its domain's use cases (main.ts runs the sweeper and reconcile jobs on the latter). */
export function buildDnsManager(deps: AppDeps): DnsManager {
  const { config } = deps
  const clock = deps.clock ?? systemClock
  const versions = createPrincipalVersions(deps.kv)
  const repo = versionedStores(createRepository(deps.db, config.DATABASE_SCHEMA), versions, (err, accounts) =>
    deps.logger.warn(
      { err, accounts },
      'committed account change not announced in kv: cached principals may lag for up to PRINCIPAL_CACHE_MAX_AGE_MS',
    ),
  )
  const cacheMaxAgeMs = deps.cachePrincipals ? config.PRINCIPAL_CACHE_MAX_AGE_MS : 0
  const views =
    cacheMaxAgeMs > 0
      ? cachedViews({
          maxAgeMs: cacheMaxAgeMs,
          now: () => clock.now().getTime(),
          onLost: (listener) => versions.onLost(listener),
        })
      : undefined
  const drift = driftMetrics(deps.onUnknownOutcome)
  const useCases = bindUseCases({
    drift: drift.observer,
    repo,
    ...(cacheMaxAgeMs > 0
      ? {
          lookup: cachedCredentialLookup(repo, versions, {
            maxAgeMs: cacheMaxAgeMs,
            now: () => clock.now().getTime(),
          }),
          views,
        }
      : {}),
    guard: createFailedSecretGuard(deps.kv, {
      windowSec: config.AUTH_FAILURE_WINDOW_SEC,
      perAddress: config.AUTH_FAILURES_PER_ADDRESS,
      perKey: config.AUTH_FAILURES_PER_KEY,
      ipv6Prefix: config.RATE_LIMIT_IPV6_PREFIX,
    }),
    provider: serializePerZone(deps.provider ?? createProvider(config), config.PROVIDER_TIMEOUT_MS),
    clock,
    logger: deps.logger,
    settings: {
      apiKeyPrefix: config.API_KEY_PREFIX,
      maxApiKeys: config.MAX_API_KEYS,
      renewWindowDays: config.RENEW_WINDOW_DAYS,
      graceDays: config.GRACE_DAYS,
      maxRecordsPerSubdomain: config.MAX_RECORDS_PER_SUBDOMAIN,
      reservedLabels: config.RESERVED_LABELS,
      allowPrivateAddresses: config.ALLOW_PRIVATE_ADDRESSES,
      nameservers: config.NAMESERVERS,
      providerTimeoutMs: config.PROVIDER_TIMEOUT_MS,
      pendingTimeoutMs: config.PENDING_TIMEOUT_MS,
      rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
      rpcMaxBatch: config.RPC_MAX_BATCH,
    },
  })
  const limiter = createRateLimiter({
    kv: deps.kv,
    name: 'dns-manager:credential',
    points: config.RATE_LIMIT_PER_MINUTE,
    durationSec: 60,
  })
  const pipeline = createPipeline({ useCases, limiter, repo })
  const people = bindPeopleUseCases({
    people: repo,
    sessions: repo,
    accounts: repo,
    audit: repo,
    mailer:
      deps.mailer ?? createMailer({ smtpUrl: config.SMTP_URL, from: config.MAIL_FROM, logger: deps.logger }),
    clock: deps.clock ?? systemClock,
    logger: deps.logger,
    settings: {
      registration: config.REGISTRATION,
      publicUrl: config.PUBLIC_URL,
      signupQuota: config.SIGNUP_QUOTA,
      signupBalanceCents: config.SIGNUP_BALANCE_CENTS,
      sessionIdleMs: config.WEB_SESSION_IDLE_MINUTES * 60_000,
      ipv6Prefix: config.RATE_LIMIT_IPV6_PREFIX,
    },
    limits: {
      address: createRateLimiter({
        kv: deps.kv,
        name: 'dns-manager:signin-address',
        points: config.SIGNIN_ATTEMPTS_PER_ADDRESS,
        durationSec: config.SIGNIN_WINDOW_SEC,
      }),
      account: createRateLimiter({
        kv: deps.kv,
        name: 'dns-manager:signin-account',
        points: config.SIGNIN_ATTEMPTS_PER_ACCOUNT,
        durationSec: config.SIGNIN_WINDOW_SEC,
      }),
    },
  })

  // Whole answers of repeated read-only requests, while the views they were made of are current.
  const memos = answerMemos<RpcHttpAnswer>(views)
  const rpcOptions = { maxBatch: config.RPC_MAX_BATCH, memo: memos.rpc }
  const graphql = createGraphQL(operations, pipeline, {
    memo: memos.graphql,
    maxDepth: config.GRAPHQL_MAX_DEPTH,
    maxFields: config.GRAPHQL_MAX_FIELDS,
    maxTokens: config.GRAPHQL_MAX_TOKENS,
    maxCost: config.GRAPHQL_MAX_COST,
    introspection: config.GRAPHQL_INTROSPECTION,
    logger: deps.logger,
    endpoints: PREFIXES.map((p) => `${p}/graphql`),
  })

  const { app, metrics } = createHttpApp(
    {
      name: 'dns-manager',
      logger: deps.logger,
      envelope: 'rest',
      trustProxy: config.TRUST_PROXY,
      bodyLimit: config.BODY_LIMIT,
      metricsToken: config.METRICS_TOKEN,
      hotRoutes: [
        ...restHotRoutes(operations, pipeline, PREFIXES),
        ...rpcHotRoutes(operations, pipeline, rpcOptions, PREFIXES),
        ...graphql.hotRoutes,
      ],
      // The back office's pages: scripts and styles from this site only, no framing.
      helmet: webHelmetOptions(),
      readiness: {
        database: databaseReadiness(deps.db),
        // Without Redis the service still serves (limits count per process): reported only.
        kv: { check: () => deps.kv.ping(), optional: true },
      },
    },
    (app) => {
      serveOpenApi(app, openApiDocument)
      // Every answer of the three call styles may carry an account's data or a new API secret
      // (keys.create, keys.regenerate): no cache, shared or private, may keep one. Twice: for
      // requests, and for the errors (a malformed body) that skip to the error handlers.
      const styles = PREFIXES.flatMap((p) => [`${p}/rest`, `${p}/rpc`, `${p}/graphql`])
      app.use(styles, (_req, res, next) => {
        res.setHeader('Cache-Control', 'no-store')
        next()
      })
      app.use(styles, ((err, _req, res, next) => {
        res.setHeader('Cache-Control', 'no-store')
        next(err)
      }) satisfies ErrorRequestHandler)
      const rpc = rpcRouter(operations, pipeline, rpcOptions)
      for (const prefix of PREFIXES) {
        // On a router of their own, as before: it answers a preflight (OPTIONS) at their paths.
        const rest = Router()
        mountRest(rest, operations, pipeline)
        app.use(prefix || '/', rest)
        app.use(`${prefix}/rpc`, rpcBodyErrors(), rpc)
      }
      const nic = dyndnsRouter({
        useCases,
        pipeline,
        allowPrivateAddresses: config.ALLOW_PRIVATE_ADDRESSES,
        audit: (entry) => repo.audit(entry),
      })
      for (const prefix of PREFIXES) app.use(prefix || '/', nic)
      graphql.mount(app)
      registerBackOffice(app, { people, pipeline, allowedOrigins: config.WEB_ALLOWED_ORIGINS })
    },
  )
  drift.register(metrics)
  graphql.register(metrics)
  memos.register(metrics)
  return { app, useCases }
}

/** The express app, without listen(): tests run it in-process with real dependencies. */
export function createApp(deps: AppDeps): Express {
  return buildDnsManager(deps).app
}

const ZErrorEnvelope = z.object({
  success: z.literal(false),
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
  }),
  request_id: z.string().optional(),
})

/** OpenAPI 3.1 of the REST style and of the back office's API, from the operations' definitions. */
export function openApiDocument(): Record<string, unknown> {
  return operationsDocument(
    {
      title: 'dns-manager',
      version: VERSION,
      description:
        'Subdomains and DNS records. Every path also works under /api/v1; JSON-RPC 2.0 at /rpc, GraphQL at /graphql.',
      securitySchemes: {
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'with X-API-Secret' },
        bearer: { type: 'http', scheme: 'bearer', description: 'KEY:SECRET' },
        accountSession: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE },
        basic: {
          type: 'http',
          scheme: 'basic',
          description: 'KEY as user name, SECRET as password (ACME clients)',
        },
      },
    },
    [...operations, ...backOfficeOperations],
    { errorSchema: ZErrorEnvelope },
  )
}
