import { quoteIdent } from '@quartet/core/db'
import type {
  AccountRow,
  RecordFields,
  RecordRow,
  RecordState,
  SubdomainRow,
  SubdomainState,
} from '../domain/ports.ts'
import type { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'

/**
 * What the repositories share: transactions, row locks and the mapping of Prisma rows to the
 * domain's plain objects. Counted things (quota, balance, key slots, renewals) are decided inside
 * one Postgres transaction that first takes the row lock of the account or subdomain, so
 * concurrent requests queue on that row and each sees what the previous one committed.
 */

export type Tx = Prisma.TransactionClient

export const accountSelect = {
  id: true,
  email: true,
  balanceCents: true,
  quotaTotal: true,
  apiAccessEnabled: true,
  ipAllowList: true,
} as const

export const zoneSelect = { id: true, name: true, priceCents: true, termYears: true } as const

export const withZoneName = { rootZone: { select: { name: true } } } as const

export function toSubdomain(row: {
  id: number
  accountId: string
  rootZoneId: number
  label: string
  fullDomain: string
  suspended: boolean
  neverExpires: boolean
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
  state: string
  stateSince: Date | null
  dnsVersion: number
  rootZone: { name: string }
}): SubdomainRow {
  const { rootZone, ...rest } = row
  return { ...rest, state: rest.state as SubdomainState, rootdomain: rootZone.name }
}

export function toRecord(row: {
  id: number
  subdomainId: number
  name: string
  type: string
  content: string
  ttl: number
  priority: number | null
  weight: number | null
  port: number | null
  flag: number | null
  tag: string | null
  state: string
  previous: unknown
  pendingSince: Date | null
  createdAt: Date
  updatedAt: Date
}): RecordRow {
  return { ...row, state: row.state as RecordState, previous: (row.previous as RecordFields | null) ?? null }
}

export const recordFields = (r: RecordFields): RecordFields => ({
  name: r.name,
  type: r.type,
  content: r.content,
  ttl: r.ttl,
  priority: r.priority,
  weight: r.weight,
  port: r.port,
  flag: r.flag,
  tag: r.tag,
})

/** Thrown inside a transaction to roll it back and hand a value to the caller. */
export class Abort<T> {
  constructor(readonly value: T) {}
}

export async function inTransaction<T, A>(
  db: Db,
  fn: (tx: Tx) => Promise<T>,
  timeoutMs = 15_000,
): Promise<{ ok: true; value: T } | { ok: false; value: A }> {
  try {
    const value = await db.$transaction(fn, { maxWait: timeoutMs, timeout: timeoutMs })
    return { ok: true, value }
  } catch (err) {
    if (err instanceof Abort) return { ok: false, value: err.value as A }
    throw err
  }
}

/** `SELECT … FOR UPDATE`: the row lock of an account or subdomain for the rest of the transaction. */
async function lockRow(
  tx: Tx,
  schema: string,
  table: 'account' | 'subdomain',
  id: string | number,
): Promise<boolean> {
  const cast = table === 'account' ? '::uuid' : '::int'
  const rows = await tx.$queryRawUnsafe<unknown[]>(
    `SELECT 1 FROM ${quoteIdent(schema)}.${quoteIdent(table)} WHERE id = $1${cast} FOR UPDATE`,
    table === 'account' ? String(id) : Number(id),
  )
  return rows.length === 1
}

export async function lockAccount(tx: Tx, schema: string, accountId: string): Promise<AccountRow | null> {
  if (!(await lockRow(tx, schema, 'account', accountId))) return null
  return tx.account.findUnique({ where: { id: accountId }, select: accountSelect })
}

export async function lockSubdomain(
  tx: Tx,
  schema: string,
  accountId: string | null,
  id: number,
): Promise<SubdomainRow | null> {
  if (!(await lockRow(tx, schema, 'subdomain', id))) return null
  const row = await tx.subdomain.findFirst({
    where: { id, ...(accountId ? { accountId } : {}) },
    include: withZoneName,
  })
  return row ? toSubdomain(row) : null
}
