import { ApiError } from '@quartet/core/errors'
import { DAY_MS } from './deps.ts'
import type { RecordFields, RecordRow, SubdomainListRow, ViewCache } from './ports.ts'
import type { RecordType, RecordValues } from './record-rules.ts'

/** What clients see of subdomains and records, and the pagination every list shares. */

export type SubdomainStatus = 'active' | 'grace' | 'suspended'

export interface SubdomainView {
  id: number
  subdomain: string
  rootdomain: string
  full_domain: string
  status: SubdomainStatus
  created_at: string
  updated_at: string
  expires_at: string | null
  never_expires: boolean
}

export interface RecordView extends RecordFields {
  id: number
  created_at: string
  updated_at: string
}

export interface Page {
  cursor?: string | undefined
  per_page?: number | undefined
}

export const iso = (date: Date) => date.toISOString()
export const addYears = (d: Date, years: number) => {
  const r = new Date(d)
  r.setUTCFullYear(r.getUTCFullYear() + years)
  return r
}

/** The largest id a row can have (Postgres `integer`). */
const MAX_ID = 2_147_483_647

export const cursorOf = (id: number | undefined) => (id === undefined ? null : String(id))
export function afterId(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return 0
  // Ids are Postgres integers: a number past the largest was never a page's last id.
  if (!/^\d{1,10}$/.test(cursor) || Number(cursor) > MAX_ID)
    throw new ApiError('bad_request', 'cursor: is not a cursor from a previous page', { field: 'cursor' })
  return Number(cursor)
}

/** `active` until expiry, then `grace` for graceDays, then `suspended` until the sweeper releases it. */
export function statusOf(
  s: Pick<SubdomainListRow, 'suspended' | 'neverExpires' | 'expiresAt'>,
  now: Date,
  graceDays: number,
): SubdomainStatus {
  if (s.suspended) return 'suspended'
  if (s.neverExpires || !s.expiresAt || now < s.expiresAt) return 'active'
  if (now.getTime() < s.expiresAt.getTime() + graceDays * DAY_MS) return 'grace'
  return 'suspended' // grace is over; the sweeper releases it
}

/**
 * When `statusOf` next gives another answer for this row without any write (epoch ms): at expiry,
 * and when grace ends. Infinity when never.
 */
export function statusTurnsAt(
  s: Pick<SubdomainListRow, 'suspended' | 'neverExpires' | 'expiresAt'>,
  now: Date,
  graceDays: number,
): number {
  if (s.suspended || s.neverExpires || !s.expiresAt) return Infinity
  const expires = s.expiresAt.getTime()
  if (now.getTime() < expires) return expires
  const graceEnds = expires + graceDays * DAY_MS
  return now.getTime() < graceEnds ? graceEnds : Infinity
}

/** No views cache: every read goes to the database (tests, and the memory kv). */
export const uncachedViews: ViewCache = {
  read: async (_accountId, _token, _key, load) => (await load()).value,
  holds: () => false,
}

export function subdomainView(s: SubdomainListRow, now: Date, graceDays: number): SubdomainView {
  return {
    id: s.id,
    subdomain: s.label,
    rootdomain: s.rootdomain,
    full_domain: s.fullDomain,
    status: statusOf(s, now, graceDays),
    created_at: iso(s.createdAt),
    updated_at: iso(s.updatedAt),
    expires_at: s.expiresAt ? iso(s.expiresAt) : null,
    never_expires: s.neverExpires,
  }
}

/** What a client sees of a record: a pending create is not there yet, a pending update still shows the old values. */
export function confirmedView(r: RecordRow): RecordView | null {
  if (r.state === 'pending_create') return null
  const v = r.state === 'pending_update' && r.previous ? { ...r, ...r.previous } : r
  return {
    id: v.id,
    name: v.name,
    type: v.type,
    content: v.content,
    ttl: v.ttl,
    priority: v.priority,
    weight: v.weight,
    port: v.port,
    flag: v.flag,
    tag: v.tag,
    created_at: iso(v.createdAt),
    updated_at: iso(v.updatedAt),
  }
}

export function asValues(r: RecordFields): RecordValues {
  return { ...r, type: r.type as RecordType }
}
