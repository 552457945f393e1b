import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import './errors.ts'
import { MAX_KEY_TOTAL_MICROS, MAX_KEY_TOTAL_USD, microsToUsd } from './money.ts'
import type { FreeModelCounter, StoredUsageEvent, UsageEventInput, UsageStore } from './ports.ts'
import { msUntilEndOfDay } from './windows.ts'

/** How far in the future an occurred_at may lie (clock skew between reporters and us). */
export const FUTURE_SKEW_MS = 5 * 60_000

export type EventResult =
  | { id: string; status: 'accepted' }
  | { id: string; status: 'duplicate' }
  | { id: string; status: 'rejected'; reason: RejectReason; message: string }

export type RejectReason = 'unknown_key' | 'occurred_at_in_future' | 'id_conflict'

export interface UsageDeps {
  usage: UsageStore
  freeModel: FreeModelCounter
  clock: Clock
}

export interface NewUsageEvent {
  id: string
  keyHash: string
  amountMicros: bigint
  byok: boolean
  freeModel: boolean
  occurredAt: Date | null
}

/**
 * The refusal of a batch that would take a key's all-time usage (or BYOK usage) past
 * MAX_KEY_TOTAL_USD, or undefined when `total` (what the key would hold after the batch) fits.
 * The store asks it while it holds the key's lock, and throws it, so nothing of the batch is kept.
 */
export function keyTotalRefusal(
  keyHash: string,
  which: 'usage' | 'byok_usage',
  before: bigint,
  total: bigint,
): ApiError | undefined {
  if (total <= MAX_KEY_TOTAL_MICROS) return undefined
  return new ApiError(
    'key_total_limit_exceeded',
    `this batch would take the ${which} of key ${keyHash} past its all-time limit of ${MAX_KEY_TOTAL_USD} USD ` +
      `(it stands at ${microsToUsd(before)} USD); nothing was recorded`,
    { key_hash: keyHash, field: which, limit: MAX_KEY_TOTAL_USD, current: microsToUsd(before) },
  )
}

/**
 * Records a batch of usage events for keys of one workspace. Each event id is counted at most
 * once, ever: a replay (in this batch, a later one, or a parallel one) is a `duplicate`, decided by
 * the database's unique (workspace, id). Replaying an id with different content is rejected as an
 * `id_conflict` rather than silently ignored.
 */
export async function recordUsage(
  deps: UsageDeps,
  workspaceId: string,
  events: NewUsageEvent[],
): Promise<{ accepted: number; duplicates: number; rejected: number; results: EventResult[] }> {
  const now = deps.clock.now()
  const early = new Map<number, EventResult>()
  const firstIndexOf = new Map<string, number>()
  const toStore: UsageEventInput[] = []
  events.forEach((event, index) => {
    const first = firstIndexOf.get(event.id)
    if (first !== undefined) return // decided against the first occurrence below
    firstIndexOf.set(event.id, index)
    if (event.occurredAt && event.occurredAt.getTime() > now.getTime() + FUTURE_SKEW_MS) {
      early.set(index, {
        id: event.id,
        status: 'rejected',
        reason: 'occurred_at_in_future',
        message: 'occurred_at lies in the future',
      })
      return
    }
    toStore.push({
      ...event,
      occurredAt: event.occurredAt ?? now,
      occurredAtGiven: event.occurredAt !== null,
    })
  })

  const { outcomes, freeModelTotals } = toStore.length
    ? await deps.usage.record(workspaceId, toStore)
    : { outcomes: new Map(), freeModelTotals: [] }

  const byId = new Map(toStore.map((e) => [e.id, e]))
  const decide = (event: NewUsageEvent, index: number): EventResult => {
    const decided = early.get(index)
    if (decided) return decided
    const outcome = outcomes.get(event.id)
    if (!outcome || outcome.kind === 'unknown_key')
      return {
        id: event.id,
        status: 'rejected',
        reason: 'unknown_key',
        message: `no key ${event.keyHash} in this workspace`,
      }
    if (outcome.kind === 'inserted') return { id: event.id, status: 'accepted' }
    return matchesStored(byId.get(event.id)!, outcome.stored)
      ? { id: event.id, status: 'duplicate' }
      : conflict(event.id)
  }
  const firstResults = new Map<number, EventResult>()
  for (const index of firstIndexOf.values()) firstResults.set(index, decide(events[index]!, index))
  const results = events.map((event, index): EventResult => {
    const first = firstIndexOf.get(event.id)!
    const firstResult = firstResults.get(first)!
    if (first === index) return firstResult
    // A repeat inside the batch: the same as a replay of the first occurrence.
    if (!sameEvent(event, events[first]!)) return conflict(event.id)
    return firstResult.status === 'rejected' ? firstResult : { id: event.id, status: 'duplicate' }
  })

  // Mirror the committed free-model totals into kv (best effort: Postgres stays the record).
  await Promise.all(
    freeModelTotals.map(async ({ keyHash, day, total }) => {
      const ttl = msUntilEndOfDay(day, now) + 60 * 60_000
      if (ttl > 0) await deps.freeModel.raise(keyHash, day, total, ttl).catch(() => undefined)
    }),
  )

  return {
    accepted: results.filter((r) => r.status === 'accepted').length,
    duplicates: results.filter((r) => r.status === 'duplicate').length,
    rejected: results.filter((r) => r.status === 'rejected').length,
    results,
  }
}

function conflict(id: string): EventResult {
  return {
    id,
    status: 'rejected',
    reason: 'id_conflict',
    message: 'this event id was already recorded with different content',
  }
}

function sameEvent(a: NewUsageEvent, b: NewUsageEvent): boolean {
  return (
    a.keyHash === b.keyHash &&
    a.amountMicros === b.amountMicros &&
    a.byok === b.byok &&
    a.freeModel === b.freeModel &&
    (a.occurredAt?.getTime() ?? null) === (b.occurredAt?.getTime() ?? null)
  )
}

function matchesStored(event: UsageEventInput, stored: StoredUsageEvent): boolean {
  return (
    event.keyHash === stored.keyHash &&
    event.amountMicros === stored.amountMicros &&
    event.byok === stored.byok &&
    event.freeModel === stored.freeModel &&
    (!event.occurredAtGiven || event.occurredAt.getTime() === stored.occurredAt.getTime())
  )
}
