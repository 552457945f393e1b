/** What the domain needs from storage; src/store implements it over Prisma/Postgres. */
import type { UsageWindows } from './windows.ts'

export const LIMIT_RESETS = ['daily', 'weekly', 'monthly'] as const
export type LimitReset = (typeof LIMIT_RESETS)[number]

export const DATA_REGIONS = ['global', 'europe', 'us'] as const
export type DataRegion = (typeof DATA_REGIONS)[number]

export interface KeyRow {
  hash: string
  workspaceId: string
  name: string
  label: string
  disabled: boolean
  limitMicros: bigint | null
  limitReset: LimitReset | null
  includeByokInLimit: boolean
  isManagementKey: boolean
  isFreeTier: boolean
  allowedDataRegions: DataRegion[]
  freeModelDailyLimit: number | null
  creatorUserId: string
  organizationId: string | null
  /** OpenRouter's `external.user`: the partner's end-user the key is attributed to. */
  externalUser: string | null
  /** All-time totals, µUSD. */
  usageMicros: bigint
  byokUsageMicros: bigint
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
}

/** Sums of the daily rollups inside the current windows, µUSD; free-model requests of today. */
export interface WindowUsage {
  usageDaily: bigint
  usageWeekly: bigint
  usageMonthly: bigint
  byokDaily: bigint
  byokWeekly: bigint
  byokMonthly: bigint
  freeModelRequestsToday: number
}

export type KeyWithUsage = KeyRow & { windows: WindowUsage }

export interface NewKey {
  hash: string
  workspaceId: string
  name: string
  label: string
  limitMicros: bigint | null
  limitReset: LimitReset | null
  includeByokInLimit: boolean
  isManagementKey: boolean
  isFreeTier: boolean
  allowedDataRegions: DataRegion[]
  freeModelDailyLimit: number | null
  creatorUserId: string
  externalUser: string | null
  /** SHA-256 (hex) of OpenRouter's `external.api_key`: unique across workspaces, never read back. */
  externalApiKeyHash: string | null
  expiresAt: Date | null
}

export interface KeyPatch {
  name?: string
  disabled?: boolean
  limitMicros?: bigint | null
  limitReset?: LimitReset | null
  includeByokInLimit?: boolean
  expiresAt?: Date | null
  allowedDataRegions?: DataRegion[]
}

/**
 * A key's version token (see store/key-record-cache.ts) as the caller already read it from kv:
 * the token (null when kv holds none) and when it was asked for (`performance.now()` just before
 * the read was sent), or 'unreadable' when kv could not be read.
 */
export type KnownVersion = { token: string | null; askedAt: number } | 'unreadable'

export interface KeyStore {
  /**
   * The key and its window sums in one bounded read (key row + at most ~37 rollup rows), or a
   * cached copy still current by the key's version token (read from kv unless `known`).
   */
  findWithUsage(hash: string, windows: UsageWindows, known?: KnownVersion): Promise<KeyWithUsage | null>
  find(hash: string): Promise<KeyRow | null>
  listWithUsage(
    workspaceId: string,
    page: { offset: number; limit: number; includeDisabled: boolean },
    windows: UsageWindows,
  ): Promise<KeyWithUsage[]>
  /**
   * Creates the key in its workspace (which must exist); 'external_api_key_taken' when another
   * key already has its external lookup key (the unique index decides, so concurrent creates
   * cannot both win).
   */
  create(key: NewKey): Promise<KeyRow | 'external_api_key_taken'>
  createWorkspace(name: string): Promise<string>
  workspaceExists(id: string): Promise<boolean>
  /** Null when no such key in that workspace. */
  update(workspaceId: string, hash: string, patch: KeyPatch, now: Date): Promise<KeyRow | null>
  delete(workspaceId: string, hash: string): Promise<boolean>
}

export interface UsageEventInput {
  id: string
  keyHash: string
  amountMicros: bigint
  byok: boolean
  freeModel: boolean
  occurredAt: Date
  /** Whether the caller gave occurred_at (else it is the arrival time, and ignored when comparing replays). */
  occurredAtGiven: boolean
}

export interface StoredUsageEvent {
  id: string
  keyHash: string
  amountMicros: bigint
  byok: boolean
  freeModel: boolean
  occurredAt: Date
}

export type StoreOutcome =
  { kind: 'inserted' } | { kind: 'unknown_key' } | { kind: 'exists'; stored: StoredUsageEvent }

export interface FreeModelTotal {
  keyHash: string
  day: string
  total: number
}

export interface UsageStore {
  /**
   * In one transaction: locks the workspace's keys named by the events (in hash order, so
   * concurrent batches cannot deadlock), inserts the events whose id is new, and adds exactly
   * those to the daily rollups and the all-time totals. Returns an outcome per event id and
   * the free-model totals of every (key, day) it touched. Throws keyTotalRefusal's error (and
   * keeps nothing of the batch) when a key's total would pass MAX_KEY_TOTAL_USD.
   */
  record(
    workspaceId: string,
    events: UsageEventInput[],
  ): Promise<{ outcomes: Map<string, StoreOutcome>; freeModelTotals: FreeModelTotal[] }>
}

/** The per-key, per-UTC-day free-model counter in kv: a mirror of committed Postgres totals. */
export interface FreeModelCounter {
  read(keyHash: string, day: string): Promise<number | null>
  /** Raise the mirror to a committed total (never lowers it), expiring after the day. */
  raise(keyHash: string, day: string, total: number, ttlMs: number): Promise<void>
}

/** What reading a key's record takes from kv, given ahead of the read. */
export interface KeyKvFacts {
  version: KnownVersion
  /** Today's free-model mirror; null when there is none or kv could not be read. */
  freeModelToday: number | null
}

/**
 * The kv values reading a key's record uses (its version token, today's free-model mirror),
 * named so that a caller can fetch them in a round trip it makes anyway (GET /api/v1/key: in the
 * rate-limit step's command), and what they say.
 */
export interface KeyReadAhead {
  kvKeys(hash: string, now: Date): string[]
  /**
   * The values of kvKeys' keys in order, or null when kv could not be read; `askedAt` is
   * `performance.now()` from just before they were asked for.
   */
  decode(values: Array<string | null> | null, askedAt: number): KeyKvFacts
}
