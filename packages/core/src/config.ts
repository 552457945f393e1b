import ipaddr from 'ipaddr.js'
import { z } from 'zod'

/**
 * Config is parsed once at boot from the environment. Every variable may be given plainly
 * (`PORT`) or with the app's prefix (`KEY_INFO_PORT`); the prefixed one wins, so one `.env`
 * can serve all four apps. Nothing else in a service reads `process.env`.
 */

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`)
    this.name = 'ConfigError'
  }
}

export type Env = Record<string, string | undefined>

export function loadConfig<S extends z.ZodObject>(
  schema: S,
  options: { prefix: string; env?: Env },
): z.infer<S> {
  const env = options.env ?? process.env
  const raw: Record<string, string | undefined> = {}
  const source: Record<string, string> = {}
  for (const key of Object.keys(schema.shape)) {
    const prefixed = `${options.prefix}_${key}`
    const value = nonEmpty(env[prefixed]) ?? nonEmpty(env[key])
    source[key] = nonEmpty(env[prefixed]) !== undefined ? prefixed : key
    raw[key] = value
  }
  const parsed = schema.safeParse(raw)
  if (parsed.success) return parsed.data
  const problems = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0] ?? '')
    const name = source[key] ?? key
    const got = raw[key]
    return `${name}: ${issue.message}${got === undefined ? ' (not set)' : ` (got ${JSON.stringify(got)})`}`
  })
  throw new ConfigError(problems)
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === '' ? undefined : v
}

// --- field helpers ---------------------------------------------------------------------------

export const zBool = (fallback: boolean) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return fallback
      const s = v.trim().toLowerCase()
      if (['1', 'true', 'yes', 'on'].includes(s)) return true
      if (['0', 'false', 'no', 'off'].includes(s)) return false
      ctx.addIssue({ code: 'custom', message: 'must be true or false' })
      return z.NEVER
    })

export const zInt = (fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ message: 'must be a number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `must be at most ${max}`)
    .default(fallback)

export const zPort = (fallback: number) => zInt(fallback, 0, 65535)

/** A port that may be left unset (undefined), e.g. a listener that is off unless configured. */
export const zOptionalPort = z
  .string()
  .optional()
  .transform((v, ctx): number | undefined => {
    if (v === undefined) return undefined
    const n = Number(v.trim())
    if (Number.isInteger(n) && n >= 0 && n <= 65535) return n
    ctx.addIssue({ code: 'custom', message: 'must be a port number (0-65535)' })
    return z.NEVER
  })

const NAMED_SUBNETS = ['loopback', 'linklocal', 'uniquelocal']

/**
 * Express `trust proxy`: a hop count or a list of CIDRs / addresses / express's named subnets.
 * Never `true`: trusting every hop lets any client choose its own IP.
 */
export const zTrustProxy = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx): number | string[] => {
      const s = v.trim()
      if (/^\d+$/.test(s)) return Number(s)
      if (['true', 'false', 'yes', 'no'].includes(s.toLowerCase())) {
        ctx.addIssue({
          code: 'custom',
          message: 'must be a hop count (e.g. 1) or a comma-separated CIDR list, never true/false',
        })
        return z.NEVER
      }
      const parts = s
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean)
      for (const part of parts) {
        if (NAMED_SUBNETS.includes(part)) continue
        const ok = part.includes('/') ? safe(() => ipaddr.parseCIDR(part)) : ipaddr.isValid(part)
        if (!ok) {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(part)} is not an IP address or CIDR` })
          return z.NEVER
        }
      }
      return parts
    })

function safe(f: () => unknown): boolean {
  try {
    f()
    return true
  } catch {
    return false
  }
}

export const zLogLevel = z
  .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  .default('info')

/** What every app reads. Apps extend this shape with their own variables. */
export function baseConfigShape(defaults: { port: number; schema: string; appName: string }) {
  return {
    PORT: zPort(defaults.port),
    HOST: z.string().default('0.0.0.0'),
    DATABASE_URL: z
      .string({ message: 'is required (postgresql://user:pass@host:5432/db); `pnpm start` sets it for you' })
      .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgresql:// URL'),
    DATABASE_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lowercase Postgres identifier')
      .default(defaults.schema),
    DATABASE_POOL_SIZE: zInt(10, 1, 500),
    /** Deadlines (db.ts PoolDeadlines): opening a connection or waiting for one; one query (0: none). */
    DATABASE_CONNECT_TIMEOUT_MS: zInt(1000, 100, 600_000),
    DATABASE_QUERY_TIMEOUT_MS: zInt(1000, 0, 3_600_000),
    MIGRATE_ON_START: zBool(true),
    REDIS_URL: z
      .string()
      .refine((v) => /^rediss?:\/\//.test(v), 'must be a redis:// or rediss:// URL')
      .optional(),
    REDIS_KEY_PREFIX: z.string().default(`quartet:${defaults.appName}:`),
    /** How long one Redis command may take before it fails (kv.ts); also the first connection's wait. */
    REDIS_COMMAND_TIMEOUT_MS: zInt(500, 50, 600_000),
    TRUST_PROXY: zTrustProxy('loopback'),
    LOG_LEVEL: zLogLevel,
    BODY_LIMIT: z
      .string()
      .regex(/^\d+(b|kb|mb)?$/i, 'must be a size such as 1mb or 512kb')
      .default('1mb'),
    SHUTDOWN_TIMEOUT_MS: zInt(10_000, 0, 600_000),
    /** The scraper's port for /metrics (http.ts serve); unset: none. 0: any free port. */
    METRICS_PORT: zOptionalPort,
    /** Interface of the metrics listener; default HOST. */
    METRICS_HOST: z.string().optional(),
    /** When set, /metrics is also served on the public port to `Authorization: Bearer <token>`. */
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /** After SIGTERM, keep accepting this long while /readyz says 503 (http.ts serve). */
    SHUTDOWN_DELAY_MS: zInt(0, 0, 600_000),
    /** Leading bits of an IPv6 client address that name one client in rate limits (rate-limit.ts addressKey). */
    RATE_LIMIT_IPV6_PREFIX: zInt(64, 16, 128),
  }
}
