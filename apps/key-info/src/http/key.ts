import type { HotRoute } from '@quartet/core/http'
import type { OperationDoc } from '@quartet/core/openapi'
import type { Express } from 'express'
import { z } from 'zod'
import { describeKey } from '../domain/keys.ts'
import { admit, bearerHash } from './auth.ts'
import type { RouteDeps } from './deps.ts'
import { spendShape, ZDataRegions, ZError } from './schemas.ts'

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
 * GET /api/v1/key as one handler, served two ways: as core's hot route for the exact path (the
 * read every client polls skips express), and by express for the rest (HEAD, a query string, a
 * trailing slash). Same headers, body and errors either way.
 */
export function keyRecordRoute(deps: RouteDeps): HotRoute {
  return {
    path: '/api/v1/key',
    async handle(req, headers) {
      // Key facts change with every usage event: no cache may keep them, errors included.
      headers.setHeader('Cache-Control', 'no-store')
      const hash = bearerHash(req)
      // One kv round trip: the rate-limit step also brings back what the record read needs
      // from kv (the version token of the cached record, today's free-model mirror).
      const now = deps.keys.clock.now()
      const askedAt = performance.now()
      const { decision, values } = await deps.limiter.consumeAndRead(hash, deps.readAhead.kvKeys(hash, now))
      admit(headers, decision)
      const facts = deps.readAhead.decode(values, askedAt)
      const data: TKeyRecord = await describeKey(deps.keys, hash, { now, ...facts })
      return { data }
    },
  }
}

export function registerKeyRoute(app: Express, route: HotRoute): void {
  app.get(route.path, async (req, res) => {
    res.json(await route.handle(req, res, {}))
  })
}

export const keyOperations: OperationDoc[] = [
  {
    method: 'get',
    path: '/api/v1/key',
    operationId: 'getCurrentKey',
    summary: 'Facts about the calling API key: spend, usage windows, limits, flags, expiry',
    tags: ['key'],
    security: ['bearer'],
    responses: {
      200: { description: 'the key record', schema: ZKeyResponse },
      401: { description: 'missing, unknown, disabled or expired key', schema: ZError },
      429: { description: 'per-key rate limit', schema: ZError, headers: { 'Retry-After': 'seconds' } },
      500: { description: 'Internal Server Error', schema: ZError },
    },
  },
]
