import { reply } from '@quartet/core/operation'
import { z } from 'zod'
import { usdToMicros } from '../domain/money.ts'
import { recordUsage } from '../domain/usage.ts'
import { managementKey, NO_STORE } from './auth.ts'
import { define } from './deps.ts'
import { ZKeyHash, ZUsd, ZUtcTimestamp } from './schemas.ts'

export const MAX_EVENTS_PER_REQUEST = 1000

export const ZUsageEvent = z
  .object({
    id: z
      .string()
      .min(1, 'must not be empty')
      .max(200)
      .describe('idempotency key: an id is counted once per workspace, ever'),
    key_hash: ZKeyHash,
    amount: ZUsd.describe('USD, at most 6 decimals'),
    byok: z.boolean().default(false).describe("spent on the caller's own provider key"),
    free_model: z
      .boolean()
      .default(false)
      .describe("counts toward the key's free-model requests of its UTC day"),
    occurred_at: ZUtcTimestamp.optional().describe(
      'when it happened (default: arrival); decides the UTC day',
    ),
  })
  .strict()

export const ZRecordUsage = z
  .object({
    events: z
      .array(ZUsageEvent)
      .min(1, 'must hold at least one event')
      .max(MAX_EVENTS_PER_REQUEST, `must hold at most ${MAX_EVENTS_PER_REQUEST} events`),
  })
  .strict()
export type TRecordUsage = z.infer<typeof ZRecordUsage>

export const ZEventResult = z.discriminatedUnion('status', [
  z.object({ id: z.string(), status: z.literal('accepted') }).strict(),
  z.object({ id: z.string(), status: z.literal('duplicate') }).strict(),
  z
    .object({
      id: z.string(),
      status: z.literal('rejected'),
      reason: z.enum(['unknown_key', 'occurred_at_in_future', 'id_conflict']),
      message: z.string(),
    })
    .strict(),
])

export const ZRecordUsageResponse = z
  .object({
    data: z
      .object({
        accepted: z.number().int(),
        duplicates: z.number().int(),
        rejected: z.number().int(),
        results: z.array(ZEventResult).describe('one per event, in request order'),
      })
      .strict(),
  })
  .strict()

export const recordUsageOperation = define({
  name: 'recordUsage',
  summary: "Record usage events for the workspace's keys (management key); idempotent by event id",
  tags: ['usage'],
  route: { method: 'post', path: '/api/v1/usage' },
  input: { body: ZRecordUsage },
  responses: {
    200: { description: 'a result per event: accepted, duplicate or rejected', schema: ZRecordUsageResponse },
  },
  auth: managementKey,
  errors: {
    bad_request: 'invalid batch (nothing written)',
    payload_too_large: 'body over BODY_LIMIT',
    key_total_limit_exceeded:
      "the batch would take a key's all-time usage past 1 000 000 000 000 USD (nothing written)",
  },
  headers: NO_STORE,
  async handler({ body }, { deps, caller }) {
    const data = await recordUsage(
      deps.usage,
      caller.workspaceId,
      body.events.map((e) => ({
        id: e.id,
        keyHash: e.key_hash,
        amountMicros: usdToMicros(e.amount)!,
        byok: e.byok,
        freeModel: e.free_model,
        occurredAt: e.occurred_at === undefined ? null : new Date(e.occurred_at),
      })),
    )
    return reply(200, { data })
  },
})
