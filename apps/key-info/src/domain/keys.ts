import { deflateRawSync } from 'node:zlib'
import { generateToken, hashToken, maskToken } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import './errors.ts'
import { microsToUsd } from './money.ts'
import type {
  DataRegion,
  FreeModelCounter,
  KeyKvFacts,
  KeyPatch,
  KeyRow,
  KeyStore,
  KeyWithUsage,
  LimitReset,
} from './ports.ts'
import { usageWindows } from './windows.ts'

/** Every key starts with this: it names the service and the key format's version. */
export const KEY_PREFIX = 'sk-qk-v1-'
/** 32 random bytes = 256 bits. */
export const KEY_BYTES = 32

export interface KeyPolicy {
  rateLimitPerMinute: number
  freeModelDailyLimit: number
  freeTierFreeModelDailyLimit: number
}

export interface KeyDeps {
  keys: KeyStore
  freeModel: FreeModelCounter
  clock: Clock
  policy: KeyPolicy
}

/** Limit and spend of a key, wire names: shared by the key record and the management API. */
export interface SpendFields {
  limit: number | null
  limit_remaining: number | null
  limit_reset: LimitReset | null
  include_byok_in_limit: boolean
  usage: number
  usage_daily: number
  usage_weekly: number
  usage_monthly: number
  byok_usage: number
  byok_usage_daily: number
  byok_usage_weekly: number
  byok_usage_monthly: number
}

/** The record of GET /api/v1/key (seed part B), wire names. */
export interface KeyRecord extends SpendFields {
  label: string
  is_free_tier: boolean
  is_management_key: boolean
  is_provisioning_key: boolean
  free_model_daily_requests: { limit: number; used: number; remaining: number }
  rate_limit: { interval: string; requests: number; note: string }
  allowed_data_regions: DataRegion[]
  creator_user_id: string
  organization_id: string | null
  workspace_id: string
  expires_at: string | null
}

/** One item of the management API (`GET /api/v1/keys`, …). */
export interface ManagedKey extends SpendFields {
  hash: string
  name: string
  label: string
  disabled: boolean
  is_management_key: boolean
  is_free_tier: boolean
  allowed_data_regions: DataRegion[]
  free_model_daily_limit: number | null
  created_at: string
  updated_at: string
  expires_at: string | null
  creator_user_id: string
  /** OpenRouter's `external.user` given at creation, or null. */
  external_user: string | null
  workspace_id: string
}

const NO_USAGE = {
  usageDaily: 0n,
  usageWeekly: 0n,
  usageMonthly: 0n,
  byokDaily: 0n,
  byokWeekly: 0n,
  byokMonthly: 0n,
  freeModelRequestsToday: 0,
}

// --- authentication ---------------------------------------------------------------------------

/** Disabled and expired keys are refused with their own messages; an unknown key with another. */
function checkUsable<K extends KeyRow>(key: K | null, now: Date): K {
  if (!key) throw new ApiError('invalid_api_key', 'Invalid API key')
  if (key.disabled) throw new ApiError('api_key_disabled', 'API key disabled')
  if (key.expiresAt && key.expiresAt.getTime() <= now.getTime())
    throw new ApiError('api_key_expired', 'API key expired')
  return key
}

/** The key with this hash (SHA-256 of the bearer key), if it may be used now. */
export async function authenticate(deps: Pick<KeyDeps, 'keys' | 'clock'>, hash: string): Promise<KeyRow> {
  return checkUsable(await deps.keys.find(hash), deps.clock.now())
}

export function requireManagementKey(key: KeyRow): void {
  if (!key.isManagementKey)
    throw new ApiError('management_key_required', 'Only management keys can perform this operation')
}

// --- GET /api/v1/key ----------------------------------------------------------------------------

/**
 * The record of the key with this hash: one bounded (or cached) read plus the free-model count.
 * `ahead` carries what kv held for it when the caller read that already (KeyReadAhead), at `now`.
 */
export async function describeKey(
  deps: KeyDeps,
  hash: string,
  ahead?: KeyKvFacts & { now: Date },
): Promise<KeyRecord> {
  const now = ahead?.now ?? deps.clock.now()
  const windows = usageWindows(now)
  const [row, mirrored] = ahead
    ? [await deps.keys.findWithUsage(hash, windows, ahead.version), ahead.freeModelToday]
    : await Promise.all([
        deps.keys.findWithUsage(hash, windows),
        deps.freeModel.read(hash, windows.today).catch(() => null),
      ])
  const key = checkUsable(row, now)
  // Postgres holds the durable count; kv only ever mirrors committed totals, so the larger of the
  // two is the count: a lost kv cannot reset it, and kv can never hold more than was committed.
  const used = Math.max(key.windows.freeModelRequestsToday, mirrored ?? 0)
  const limit = freeModelLimit(key, deps.policy)
  return {
    label: key.label,
    ...spendFields(key),
    is_free_tier: key.isFreeTier,
    is_management_key: key.isManagementKey,
    is_provisioning_key: key.isManagementKey,
    free_model_daily_requests: { limit, used, remaining: Math.max(0, limit - used) },
    rate_limit: {
      interval: '1m',
      requests: deps.policy.rateLimitPerMinute,
      note: 'This field is deprecated and safe to ignore.',
    },
    allowed_data_regions: key.allowedDataRegions,
    creator_user_id: key.creatorUserId,
    organization_id: key.organizationId,
    workspace_id: key.workspaceId,
    expires_at: key.expiresAt?.toISOString() ?? null,
  }
}

export function freeModelLimit(key: KeyRow, policy: KeyPolicy): number {
  return (
    key.freeModelDailyLimit ??
    (key.isFreeTier ? policy.freeTierFreeModelDailyLimit : policy.freeModelDailyLimit)
  )
}

/** max(0, limit − spend in the reset period − BYOK spend in it when it counts); null when unlimited. */
export function limitRemaining(key: KeyWithUsage): number | null {
  if (key.limitMicros === null) return null
  const w = key.windows
  const [spent, byok] =
    key.limitReset === 'daily'
      ? [w.usageDaily, w.byokDaily]
      : key.limitReset === 'weekly'
        ? [w.usageWeekly, w.byokWeekly]
        : key.limitReset === 'monthly'
          ? [w.usageMonthly, w.byokMonthly]
          : [key.usageMicros, key.byokUsageMicros]
  const remaining = key.limitMicros - spent - (key.includeByokInLimit ? byok : 0n)
  return microsToUsd(remaining > 0n ? remaining : 0n)
}

/**
 * Spend fields in USD, worked out once per record: they depend on the record alone, and a
 * cached record (store/key-record-cache.ts) answers many reads. Records are never changed.
 */
const spendOfRecord = new WeakMap<KeyWithUsage, SpendFields>()

function spendFields(key: KeyWithUsage): SpendFields {
  let spend = spendOfRecord.get(key)
  if (!spend) {
    const w = key.windows
    spend = {
      limit: key.limitMicros === null ? null : microsToUsd(key.limitMicros),
      limit_remaining: limitRemaining(key),
      limit_reset: key.limitReset,
      include_byok_in_limit: key.includeByokInLimit,
      usage: microsToUsd(key.usageMicros),
      usage_daily: microsToUsd(w.usageDaily),
      usage_weekly: microsToUsd(w.usageWeekly),
      usage_monthly: microsToUsd(w.usageMonthly),
      byok_usage: microsToUsd(key.byokUsageMicros),
      byok_usage_daily: microsToUsd(w.byokDaily),
      byok_usage_weekly: microsToUsd(w.byokWeekly),
      byok_usage_monthly: microsToUsd(w.byokMonthly),
    }
    spendOfRecord.set(key, spend)
  }
  return spend
}

export function toManagedKey(key: KeyWithUsage): ManagedKey {
  return {
    hash: key.hash,
    name: key.name,
    label: key.label,
    disabled: key.disabled,
    ...spendFields(key),
    is_management_key: key.isManagementKey,
    is_free_tier: key.isFreeTier,
    allowed_data_regions: key.allowedDataRegions,
    free_model_daily_limit: key.freeModelDailyLimit,
    created_at: key.createdAt.toISOString(),
    updated_at: key.updatedAt.toISOString(),
    expires_at: key.expiresAt?.toISOString() ?? null,
    creator_user_id: key.creatorUserId,
    external_user: key.externalUser,
    workspace_id: key.workspaceId,
  }
}

// --- management -------------------------------------------------------------------------------

export interface CreateKeyInput {
  name: string
  limitMicros: bigint | null
  limitReset: LimitReset | null
  includeByokInLimit: boolean
  expiresAt: Date | null
  isManagementKey: boolean
  isFreeTier: boolean
  allowedDataRegions: DataRegion[]
  freeModelDailyLimit: number | null
  /** OpenRouter's `external.user`: the partner's end-user the key is attributed to. */
  externalUser: string | null
  /** OpenRouter's `external.api_key` (plaintext; only its SHA-256 is kept), or null. */
  externalApiKey: string | null
}

/** OpenRouter's rule for a partner-supplied lookup key: at least 32 characters… */
export const EXTERNAL_API_KEY_MIN_LENGTH = 32
/**
 * …and "sufficient entropy", judged two ways: its characters, counted by their own frequencies,
 * must carry this many bits (Shannon; 32 random hex digits score about 118), and deflate must
 * not shrink it below 128 bits (a repeated run such as `abcdefgh` × 8 passes the first test only).
 */
export const EXTERNAL_API_KEY_MIN_BITS = 96
const EXTERNAL_API_KEY_MIN_DEFLATED_BYTES = 16

/** Why a partner's lookup key is refused, or undefined when it may be used. */
export function externalApiKeyProblem(key: string): string | undefined {
  if (key.length < EXTERNAL_API_KEY_MIN_LENGTH)
    return `must be at least ${EXTERNAL_API_KEY_MIN_LENGTH} characters`
  const chars = [...key]
  const counts = new Map<string, number>()
  for (const ch of chars) counts.set(ch, (counts.get(ch) ?? 0) + 1)
  let bits = 0
  for (const c of counts.values()) bits -= c * Math.log2(c / chars.length)
  if (bits < EXTERNAL_API_KEY_MIN_BITS || deflateRawSync(key).length < EXTERNAL_API_KEY_MIN_DEFLATED_BYTES)
    return 'is too predictable: use a random key (128 bits or more)'
  return undefined
}

/**
 * Where a management key asks to work (OpenRouter's `workspace_id`). OpenRouter lets an
 * organization's management key reach each of its workspaces; in key-info a workspace is the
 * tenant, so a management key reaches its own workspace only: naming it is the same as naming
 * none, and any other workspace is as unknown as a missing one (404, nothing revealed).
 */
function reachableWorkspace(caller: KeyRow, workspaceId: string | undefined): string {
  if (workspaceId !== undefined && workspaceId !== caller.workspaceId)
    throw new ApiError('workspace_not_found', `no workspace ${workspaceId}`)
  return caller.workspaceId
}

function assertFuture(expiresAt: Date | null | undefined, now: Date): void {
  if (expiresAt && expiresAt.getTime() <= now.getTime())
    throw new ApiError('bad_request', 'expires_at must be in the future')
}

/**
 * Mints a key: 256 random bits behind the service prefix. Only the SHA-256 is stored; the
 * plaintext is returned here once and can never be read again.
 */
export async function createKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  owner: { workspaceId: string; creatorUserId: string },
  input: CreateKeyInput,
): Promise<{ key: string; data: ManagedKey }> {
  assertFuture(input.expiresAt, deps.clock.now())
  const { externalApiKey, ...fields } = input
  const token = generateToken(KEY_PREFIX, KEY_BYTES)
  const row = await deps.keys.create({
    hash: hashToken(token),
    workspaceId: owner.workspaceId,
    creatorUserId: owner.creatorUserId,
    label: maskToken(token),
    externalApiKeyHash: externalApiKey === null ? null : hashToken(externalApiKey),
    ...fields,
  })
  if (row === 'external_api_key_taken')
    throw new ApiError('external_api_key_in_use', 'external.api_key is already in use by another key')
  return { key: token, data: toManagedKey({ ...row, windows: NO_USAGE }) }
}

/** Who a management key creates a key for: OpenRouter's `workspace_id` and `creator_user_id`. */
export interface KeyOwnerChoice {
  /** The workspace to create the key in; only the caller's own is reachable (default). */
  workspaceId?: string
  /** The member the key is attributed to; default (also for null): the caller's creator. */
  creatorUserId?: string | null
}

/** A management key creates a key in its own workspace, by default on behalf of its own creator. */
export async function createWorkspaceKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  input: CreateKeyInput,
  owner: KeyOwnerChoice = {},
): Promise<{ key: string; data: ManagedKey }> {
  requireManagementKey(caller)
  return createKey(
    deps,
    {
      workspaceId: reachableWorkspace(caller, owner.workspaceId),
      creatorUserId: owner.creatorUserId ?? caller.creatorUserId,
    },
    input,
  )
}

export async function listKeys(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  page: { offset: number; limit: number; includeDisabled: boolean; workspaceId?: string },
): Promise<ManagedKey[]> {
  requireManagementKey(caller)
  const workspaceId = reachableWorkspace(caller, page.workspaceId)
  const rows = await deps.keys.listWithUsage(
    workspaceId,
    { offset: page.offset, limit: page.limit, includeDisabled: page.includeDisabled },
    usageWindows(deps.clock.now()),
  )
  return rows.map(toManagedKey)
}

/** A key of the caller's workspace; another workspace's key is as unknown as a missing one. */
async function findOwnKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  hash: string,
): Promise<KeyWithUsage> {
  const key = await deps.keys.findWithUsage(hash, usageWindows(deps.clock.now()))
  if (!key || key.workspaceId !== caller.workspaceId)
    throw new ApiError('key_not_found', `no key with hash ${hash}`)
  return key
}

export async function getKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  hash: string,
): Promise<ManagedKey> {
  requireManagementKey(caller)
  return toManagedKey(await findOwnKey(deps, caller, hash))
}

export async function updateKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  hash: string,
  patch: KeyPatch,
): Promise<ManagedKey> {
  requireManagementKey(caller)
  const now = deps.clock.now()
  assertFuture(patch.expiresAt, now)
  const updated = await deps.keys.update(caller.workspaceId, hash, patch, now)
  if (!updated) throw new ApiError('key_not_found', `no key with hash ${hash}`)
  return toManagedKey(await findOwnKey(deps, caller, hash))
}

export async function deleteKey(
  deps: Pick<KeyDeps, 'keys' | 'clock'>,
  caller: KeyRow,
  hash: string,
): Promise<{ deleted: true }> {
  requireManagementKey(caller)
  if (!(await deps.keys.delete(caller.workspaceId, hash)))
    throw new ApiError('key_not_found', `no key with hash ${hash}`)
  return { deleted: true }
}
