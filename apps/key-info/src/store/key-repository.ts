import { preparedStatement } from '@quartet/core/db'
import type {
  DataRegion,
  KeyPatch,
  KeyRow,
  KeyStore,
  KeyWithUsage,
  LimitReset,
  NewKey,
} from '../domain/ports.ts'
import type { UsageWindows } from '../domain/windows.ts'
import { type ApiKey, Prisma } from '../generated/prisma/client.ts'
import { type Db, rawOf } from './db.ts'

interface KeyUsageSqlRow {
  hash: string
  workspace_id: string
  name: string
  label: string
  disabled: boolean
  limit_micros: string | null
  limit_reset: string | null
  include_byok_in_limit: boolean
  is_management_key: boolean
  is_free_tier: boolean
  allowed_data_regions: string[]
  free_model_daily_limit: number | null
  creator_user_id: string
  organization_id: string | null
  external_user: string | null
  usage_micros: string
  byok_usage_micros: string
  expires_at: Date | null
  created_at: Date
  updated_at: Date
  // int8 arrives from pg as text
  usage_daily: string
  usage_weekly: string
  usage_monthly: string
  byok_daily: string
  byok_weekly: string
  byok_monthly: string
  free_model_today: number
}

/**
 * The key row and its window sums in one statement. The lateral subquery reads only the key's
 * rollups from the earliest window start to today (primary-key range, at most ~37 rows): never
 * the raw events. $1 today, $2 week start, $3 month start, $4 earliest day; `where` and `tail`
 * use $5 on.
 */
function keysWithUsageSql(schema: string, where: string, tail = ''): string {
  return `
    SELECT k.hash, k.workspace_id::text AS workspace_id, k.name, k.label, k.disabled, k.limit_micros,
           k.limit_reset, k.include_byok_in_limit, k.is_management_key, k.is_free_tier,
           k.allowed_data_regions, k.free_model_daily_limit, k.creator_user_id, k.organization_id,
           k.external_user, k.usage_micros, k.byok_usage_micros, k.expires_at, k.created_at, k.updated_at,
           u.usage_daily, u.usage_weekly, u.usage_monthly, u.byok_daily, u.byok_weekly, u.byok_monthly,
           u.free_model_today
    FROM ${schema}.api_key k
    CROSS JOIN LATERAL (
      SELECT
        COALESCE(SUM(d.usage_micros) FILTER (WHERE d.day = $1::date), 0)::bigint AS usage_daily,
        COALESCE(SUM(d.usage_micros) FILTER (WHERE d.day >= $2::date), 0)::bigint AS usage_weekly,
        COALESCE(SUM(d.usage_micros) FILTER (WHERE d.day >= $3::date), 0)::bigint AS usage_monthly,
        COALESCE(SUM(d.byok_usage_micros) FILTER (WHERE d.day = $1::date), 0)::bigint AS byok_daily,
        COALESCE(SUM(d.byok_usage_micros) FILTER (WHERE d.day >= $2::date), 0)::bigint AS byok_weekly,
        COALESCE(SUM(d.byok_usage_micros) FILTER (WHERE d.day >= $3::date), 0)::bigint AS byok_monthly,
        COALESCE(SUM(d.free_model_requests) FILTER (WHERE d.day = $1::date), 0)::int AS free_model_today
      FROM ${schema}.api_key_daily_usage d
      WHERE d.key_hash = k.hash AND d.day >= $4::date AND d.day <= $1::date
    ) u
    WHERE ${where}
    ${tail}`
}

const windowParams = (w: UsageWindows) => [w.today, w.weekStart, w.monthStart, w.from]

function fromSqlRow(r: KeyUsageSqlRow): KeyWithUsage {
  return {
    hash: r.hash,
    workspaceId: r.workspace_id,
    name: r.name,
    label: r.label,
    disabled: r.disabled,
    limitMicros: r.limit_micros === null ? null : BigInt(r.limit_micros),
    limitReset: r.limit_reset as LimitReset | null,
    includeByokInLimit: r.include_byok_in_limit,
    isManagementKey: r.is_management_key,
    isFreeTier: r.is_free_tier,
    allowedDataRegions: r.allowed_data_regions as DataRegion[],
    freeModelDailyLimit: r.free_model_daily_limit,
    creatorUserId: r.creator_user_id,
    organizationId: r.organization_id,
    externalUser: r.external_user,
    usageMicros: BigInt(r.usage_micros),
    byokUsageMicros: BigInt(r.byok_usage_micros),
    expiresAt: r.expires_at === null ? null : new Date(r.expires_at),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    windows: {
      usageDaily: BigInt(r.usage_daily),
      usageWeekly: BigInt(r.usage_weekly),
      usageMonthly: BigInt(r.usage_monthly),
      byokDaily: BigInt(r.byok_daily),
      byokWeekly: BigInt(r.byok_weekly),
      byokMonthly: BigInt(r.byok_monthly),
      freeModelRequestsToday: Number(r.free_model_today),
    },
  }
}

function fromModel(k: ApiKey): KeyRow {
  return {
    hash: k.hash,
    workspaceId: k.workspaceId,
    name: k.name,
    label: k.label,
    disabled: k.disabled,
    limitMicros: k.limitMicros,
    limitReset: k.limitReset as LimitReset | null,
    includeByokInLimit: k.includeByokInLimit,
    isManagementKey: k.isManagementKey,
    isFreeTier: k.isFreeTier,
    allowedDataRegions: k.allowedDataRegions as DataRegion[],
    freeModelDailyLimit: k.freeModelDailyLimit,
    creatorUserId: k.creatorUserId,
    organizationId: k.organizationId,
    externalUser: k.externalUser,
    usageMicros: k.usageMicros,
    byokUsageMicros: k.byokUsageMicros,
    expiresAt: k.expiresAt,
    createdAt: k.createdAt,
    updatedAt: k.updatedAt,
  }
}

const isUniqueViolation = (err: unknown) =>
  err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002'

export function createKeyRepository(db: Db): KeyStore {
  const { pool, schema } = rawOf(db)
  // The hot read: planning it costs Postgres more than running it.
  const oneKey = preparedStatement<KeyUsageSqlRow>(
    pool,
    'key_info_key_with_usage',
    keysWithUsageSql(schema, 'k.hash = $5'),
  )
  return {
    async findWithUsage(hash, windows) {
      const rows = await oneKey([...windowParams(windows), hash])
      return rows[0] ? fromSqlRow(rows[0]) : null
    },

    async find(hash) {
      const key = await db.apiKey.findUnique({ where: { hash } })
      return key ? fromModel(key) : null
    },

    async listWithUsage(workspaceId, page, windows) {
      const where = `k.workspace_id = $5::uuid${page.includeDisabled ? '' : ' AND NOT k.disabled'}`
      const { rows } = await pool.query<KeyUsageSqlRow>(
        keysWithUsageSql(schema, where, 'ORDER BY k.created_at DESC, k.hash LIMIT $6 OFFSET $7'),
        [...windowParams(windows), workspaceId, page.limit, page.offset],
      )
      return rows.map(fromSqlRow)
    },

    async create(key: NewKey) {
      try {
        return fromModel(await db.apiKey.create({ data: key }))
      } catch (err) {
        // The key's own hash is 256 random bits: a unique violation can only be the lookup key.
        if (key.externalApiKeyHash !== null && isUniqueViolation(err)) return 'external_api_key_taken'
        throw err
      }
    },

    async createWorkspace(name) {
      return (await db.workspace.create({ data: { name } })).id
    },

    async workspaceExists(id) {
      return (await db.workspace.count({ where: { id } })) > 0
    },

    async update(workspaceId, hash, patch: KeyPatch, now) {
      const { count } = await db.apiKey.updateMany({
        where: { hash, workspaceId },
        data: { ...patch, updatedAt: now },
      })
      if (count === 0) return null
      return fromModel(await db.apiKey.findUniqueOrThrow({ where: { hash } }))
    },

    async delete(workspaceId, hash) {
      const { count } = await db.apiKey.deleteMany({ where: { hash, workspaceId } })
      return count > 0
    },
  }
}
