import { z } from 'zod'
import { DATA_REGIONS, LIMIT_RESETS } from '../domain/ports.ts'
import { MAX_AMOUNT_USD, usdToMicros } from '../domain/money.ts'

/** USD as a JSON number ≥ 0 with at most 6 decimals (µUSD exact); strings, NaN, Infinity are refused. */
export const ZUsd = z
  .number({ message: 'must be a number (USD)' })
  .min(0, 'must be at least 0')
  .max(MAX_AMOUNT_USD, `must be at most ${MAX_AMOUNT_USD}`)
  .refine((v) => usdToMicros(v) !== null, 'must have at most 6 decimal places (1 µUSD)')

export const ZLimitReset = z.enum(LIMIT_RESETS)
export const ZDataRegions = z
  .array(z.enum(DATA_REGIONS))
  .min(1, 'must name at least one region')
  .refine((a) => new Set(a).size === a.length, 'must not repeat a region')

/** An ISO 8601 timestamp in UTC (`Z`), e.g. 2027-01-01T00:00:00Z. */
/**
 * An ISO 8601 UTC timestamp of the years 0001–9999. Year 0000 is valid ISO (1 BC) and a valid
 * JavaScript Date, but Postgres has no year 0: it would fail the insert, not the request.
 */
export const ZUtcTimestamp = z.iso
  .datetime({ message: 'must be an ISO 8601 UTC timestamp ending in Z' })
  .refine((v) => !v.startsWith('0000-'), 'must lie in the years 0001 to 9999')

export const ZKeyHash = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be the key hash: 64 lowercase hex characters')

/** A workspace id as key-info reports it (`workspace_id`): a UUID, compared in lower case. */
export const ZWorkspaceId = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a workspace id (a UUID)')
  .transform((v) => v.toLowerCase())

/** A user identifier (creator_user_id, external.user): 1–200 characters. */
export const ZUserId = z.string().trim().min(1, 'must not be empty').max(200)

export const ZError = z.object({ error: z.object({ code: z.number().int(), message: z.string() }) })

/** Limit and spend fields of a key (the domain's SpendFields), shared by the key record and the management API. */
export const spendShape = {
  limit: z.number().nullable().describe('spending limit in USD; null when unlimited'),
  limit_remaining: z.number().nullable(),
  limit_reset: ZLimitReset.nullable(),
  include_byok_in_limit: z.boolean(),
  usage: z.number(),
  usage_daily: z.number(),
  usage_weekly: z.number(),
  usage_monthly: z.number(),
  byok_usage: z.number(),
  byok_usage_daily: z.number(),
  byok_usage_weekly: z.number(),
  byok_usage_monthly: z.number(),
}
