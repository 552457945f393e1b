import { reply } from '@quartet/core/operation'
import { z } from 'zod'
import { describeKey } from '../domain/keys.ts'
import { keyHolder, NO_STORE } from './auth.ts'
import { define } from './deps.ts'
import { spendShape, ZDataRegions } from './schemas.ts'

/** The key record of seed part B, field for field. Amounts are USD. */
export const ZKeyRecord = z
  .object({
    label: z.string().describe('masked key: leading and trailing characters with ...'),
    ...spendShape,
    is_free_tier: z.boolean(),
    is_management_key: z.boolean(),
    is_provisioning_key: z.boolean(),
    free_model_daily_requests: z
      .object({ limit: z.number().int(), used: z.number().int(), remaining: z.number().int() })
      .strict(),
    rate_limit: z
      .object({ interval: z.string(), requests: z.number().int(), note: z.string() })
      .strict()
      .describe('deprecated; ignore'),
    allowed_data_regions: ZDataRegions,
    creator_user_id: z.string(),
    organization_id: z.string().nullable(),
    workspace_id: z.string(),
    expires_at: z.string().nullable(),
  })
  .strict()
export type TKeyRecord = z.infer<typeof ZKeyRecord>
export const ZKeyResponse = z.object({ data: ZKeyRecord }).strict()

/**
 * GET /api/v1/key: served as core's hot route at the exact path (the read every client polls
 * skips express), and by express for the rest (HEAD, a query string, a trailing slash), from this
 * one definition: same headers, body and errors either way.
 */
export const getCurrentKey = define({
  name: 'getCurrentKey',
  summary: 'Facts about the calling API key: spend, usage windows, limits, flags, expiry',
  tags: ['key'],
  route: { method: 'get', path: '/api/v1/key' },
  input: {},
  responses: { 200: { description: 'the key record', schema: ZKeyResponse } },
  auth: keyHolder,
  errors: {
    invalid_api_key: 'missing, unknown, disabled or expired key',
    api_key_disabled: 'missing, unknown, disabled or expired key',
    api_key_expired: 'missing, unknown, disabled or expired key',
    internal_error: 'Internal Server Error',
  },
  headers: NO_STORE,
  hot: {
    dependsOn:
      "the key's row with its usage totals (per process, under the key's version token in Redis: store/key-record-cache.ts), the usage windows of the day, and the clock",
    invalidatedBy:
      'a key change (PATCH, DELETE, the CLI) replaces the version token after it commits, so every replica reads the row again; a record is kept KEY_CACHE_MAX_AGE_MS at most, and without Redis every read goes to Postgres',
  },
  async handler(_input, { deps, caller }) {
    const data: TKeyRecord = await describeKey(deps.keys, caller.hash, { now: caller.now, ...caller.facts })
    return reply(200, { data })
  },
})
