import type { RecordValues } from '../domain/records.ts'
import { quoteIdent } from '@quartet/core/db'
import type { Db } from './db.ts'
import { Prisma } from '../generated/prisma/client.ts'

/**
 * The repositories of dns-manager. Only this folder imports Prisma; everything returns plain
 * objects. Counted things (quota, balance, key slots, renewals) are decided inside one Postgres
 * transaction that first takes the row lock of the account or subdomain, so concurrent requests
 * queue on that row and each sees what the previous one committed.
 */

export interface AccountRow {
  id: string
  email: string
  balanceCents: number
  quotaTotal: number
  apiAccessEnabled: boolean
  ipAllowList: string[]
}
export interface CredentialRow {
  id: string
  accountId: string
  publicKey: string
  secretHash: string
  createdAt: Date
  lastUsedAt: Date | null
}
export interface ZoneRow {
  id: number
  name: string
  priceCents: number
  termYears: number
}
export interface SubdomainRow {
  id: number
  accountId: string
  rootZoneId: number
  rootdomain: string
  label: string
  fullDomain: string
  suspended: boolean
  neverExpires: boolean
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
}
export type RecordState = 'active' | 'pending_create' | 'pending_update' | 'pending_delete'
/** A record's values as stored: the domain's validated values, with the type as the column holds it. */
export type RecordFields = Omit<RecordValues, 'type'> & { type: string }
export interface RecordRow extends RecordFields {
  id: number
  subdomainId: number
  state: RecordState
  previous: RecordFields | null
  pendingSince: Date | null
  createdAt: Date
  updatedAt: Date
}

type Tx = Prisma.TransactionClient

const accountSelect = {
  id: true,
  email: true,
  balanceCents: true,
  quotaTotal: true,
  apiAccessEnabled: true,
  ipAllowList: true,
} as const

function toSubdomain(row: {
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
  rootZone: { name: string }
}): SubdomainRow {
  const { rootZone, ...rest } = row
  return { ...rest, rootdomain: rootZone.name }
}

function toRecord(row: {
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

const recordFields = (r: RecordFields): RecordFields => ({
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
class Abort<T> {
  constructor(readonly value: T) {}
}

async function inTransaction<T, A>(
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

export function createRepository(db: Db, schema: string) {
  const lockAccount = async (tx: Tx, accountId: string): Promise<AccountRow | null> => {
    if (!(await lockRow(tx, schema, 'account', accountId))) return null
    return tx.account.findUnique({ where: { id: accountId }, select: accountSelect })
  }
  const lockSubdomain = async (
    tx: Tx,
    accountId: string | null,
    id: number,
  ): Promise<SubdomainRow | null> => {
    if (!(await lockRow(tx, schema, 'subdomain', id))) return null
    const row = await tx.subdomain.findFirst({
      where: { id, ...(accountId ? { accountId } : {}) },
      include: { rootZone: { select: { name: true } } },
    })
    return row ? toSubdomain(row) : null
  }

  return {
    ping: () => db.$queryRaw`SELECT 1`,

    // --- accounts and credentials -----------------------------------------------------------
    async findCredential(
      publicKey: string,
    ): Promise<{ credential: CredentialRow; account: AccountRow } | null> {
      // Every request runs this: one round trip (a join) instead of Prisma's two for an include.
      const rows = await db.$queryRawUnsafe<
        Array<Omit<CredentialRow, 'accountId'> & { account_id: string } & Omit<AccountRow, 'id'>>
      >(
        `SELECT c.id, c.account_id, c.public_key AS "publicKey", c.secret_hash AS "secretHash",
                c.created_at AS "createdAt", c.last_used_at AS "lastUsedAt", a.email,
                a.balance_cents AS "balanceCents", a.quota_total AS "quotaTotal",
                a.api_access_enabled AS "apiAccessEnabled", a.ip_allow_list AS "ipAllowList"
           FROM ${quoteIdent(schema)}."api_credential" c
           JOIN ${quoteIdent(schema)}."account" a ON a.id = c.account_id
          WHERE c.public_key = $1`,
        publicKey,
      )
      const r = rows[0]
      if (!r) return null
      return {
        credential: {
          id: r.id,
          accountId: r.account_id,
          publicKey: r.publicKey,
          secretHash: r.secretHash,
          createdAt: r.createdAt,
          lastUsedAt: r.lastUsedAt,
        },
        account: {
          id: r.account_id,
          email: r.email,
          balanceCents: r.balanceCents,
          quotaTotal: r.quotaTotal,
          apiAccessEnabled: r.apiAccessEnabled,
          ipAllowList: r.ipAllowList ?? [],
        },
      }
    },
    async touchCredential(id: string, now: Date): Promise<void> {
      await db.apiCredential.updateMany({
        where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - 60_000) } }] },
        data: { lastUsedAt: now },
      })
    },
    async createAccount(input: {
      email: string
      quotaTotal: number
      balanceCents: number
      apiAccessEnabled: boolean
      ipAllowList: string[]
      credential: { publicKey: string; secretHash: string }
    }): Promise<AccountRow> {
      const { credential, ...data } = input
      return db.account.create({
        data: { ...data, credentials: { create: credential } },
        select: accountSelect,
      })
    },
    async updateAccount(
      id: string,
      data: Partial<Pick<AccountRow, 'email' | 'quotaTotal' | 'apiAccessEnabled' | 'ipAllowList'>>,
    ): Promise<AccountRow | null> {
      const n = await db.account.updateMany({ where: { id }, data })
      return n.count ? db.account.findUnique({ where: { id }, select: accountSelect }) : null
    },
    async creditBalance(id: string, cents: number): Promise<AccountRow | null> {
      const n = await db.account.updateMany({ where: { id }, data: { balanceCents: { increment: cents } } })
      return n.count ? db.account.findUnique({ where: { id }, select: accountSelect }) : null
    },
    getAccount: (id: string) => db.account.findUnique({ where: { id }, select: accountSelect }),
    /** On every quota read (auth.verify, quota.get): plain SQL, no query planning in the client. */
    async countSubdomains(accountId: string): Promise<number> {
      const rows = await db.$queryRawUnsafe<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}."subdomain" WHERE account_id = $1::uuid`,
        accountId,
      )
      return rows[0]?.n ?? 0
    },

    listCredentials: (accountId: string): Promise<CredentialRow[]> =>
      db.apiCredential.findMany({ where: { accountId }, orderBy: { createdAt: 'asc' } }),
    /** Adds a credential unless the account already has `max`; the account row lock makes it exact. */
    async addCredentialWithinLimit(
      accountId: string,
      credential: { publicKey: string; secretHash: string },
      max: number,
    ): Promise<CredentialRow | 'limit'> {
      const r = await inTransaction<CredentialRow, 'limit'>(db, async (tx) => {
        await lockAccount(tx, accountId)
        if ((await tx.apiCredential.count({ where: { accountId } })) >= max) throw new Abort('limit')
        return tx.apiCredential.create({ data: { accountId, ...credential } })
      })
      return r.value
    },
    async deleteCredential(accountId: string, id: string): Promise<boolean> {
      return (await db.apiCredential.deleteMany({ where: { accountId, id } })).count === 1
    },
    async replaceCredentialSecret(
      accountId: string,
      id: string,
      secretHash: string,
    ): Promise<CredentialRow | null> {
      const n = await db.apiCredential.updateMany({ where: { accountId, id }, data: { secretHash } })
      return n.count ? db.apiCredential.findUnique({ where: { id } }) : null
    },

    // --- zones --------------------------------------------------------------------------------
    listZones: (): Promise<ZoneRow[]> =>
      db.rootZone.findMany({
        orderBy: { name: 'asc' },
        select: { id: true, name: true, priceCents: true, termYears: true },
      }),
    findZone: (name: string): Promise<ZoneRow | null> =>
      db.rootZone.findUnique({
        where: { name },
        select: { id: true, name: true, priceCents: true, termYears: true },
      }),
    upsertZone: (zone: Omit<ZoneRow, 'id'>): Promise<ZoneRow> =>
      db.rootZone.upsert({
        where: { name: zone.name },
        create: zone,
        update: { priceCents: zone.priceCents, termYears: zone.termYears },
        select: { id: true, name: true, priceCents: true, termYears: true },
      }),

    // --- subdomains ---------------------------------------------------------------------------
    /**
     * Creates a subdomain within the quota, charging the zone price, in one transaction under the
     * account's row lock: 10 parallel creates with 2 free slots give exactly 2.
     */
    async createSubdomain(input: {
      accountId: string
      zone: ZoneRow
      label: string
      fullDomain: string
      expiresAt: Date | null
      neverExpires: boolean
    }): Promise<
      | { ok: true; subdomain: SubdomainRow }
      | { ok: false; reason: 'quota'; used: number; total: number }
      | { ok: false; reason: 'balance'; balance: number; required: number }
      | { ok: false; reason: 'taken' }
    > {
      type Refusal =
        | { ok: false; reason: 'quota'; used: number; total: number }
        | { ok: false; reason: 'balance'; balance: number; required: number }
        | { ok: false; reason: 'taken' }
      const r = await inTransaction<SubdomainRow, Refusal>(db, async (tx) => {
        const account = await lockAccount(tx, input.accountId)
        if (!account) throw new Error('account vanished')
        const used = await tx.subdomain.count({ where: { accountId: input.accountId } })
        if (used >= account.quotaTotal)
          throw new Abort({ ok: false, reason: 'quota', used, total: account.quotaTotal })
        if (await tx.subdomain.findUnique({ where: { fullDomain: input.fullDomain }, select: { id: true } }))
          throw new Abort({ ok: false, reason: 'taken' })
        const price = input.zone.priceCents
        if (price > 0) {
          const charged = await tx.account.updateMany({
            where: { id: input.accountId, balanceCents: { gte: price } },
            data: { balanceCents: { decrement: price } },
          })
          if (charged.count === 0)
            throw new Abort({ ok: false, reason: 'balance', balance: account.balanceCents, required: price })
        }
        const row = await tx.subdomain.create({
          data: {
            accountId: input.accountId,
            rootZoneId: input.zone.id,
            label: input.label,
            fullDomain: input.fullDomain,
            expiresAt: input.expiresAt,
            neverExpires: input.neverExpires,
          },
          include: { rootZone: { select: { name: true } } },
        })
        return toSubdomain(row)
      })
      return r.ok ? { ok: true, subdomain: r.value } : r.value
    },

    async getSubdomain(accountId: string | null, id: number): Promise<SubdomainRow | null> {
      const row = await db.subdomain.findFirst({
        where: { id, ...(accountId ? { accountId } : {}) },
        include: { rootZone: { select: { name: true } } },
      })
      return row ? toSubdomain(row) : null
    },
    async findSubdomainByName(fullDomain: string): Promise<SubdomainRow | null> {
      const row = await db.subdomain.findUnique({
        where: { fullDomain },
        include: { rootZone: { select: { name: true } } },
      })
      return row ? toSubdomain(row) : null
    },
    async listSubdomains(
      accountId: string,
      options: {
        afterId: number
        limit: number
        rootdomain?: string | undefined
        search?: string | undefined
      },
    ): Promise<SubdomainRow[]> {
      const rows = await db.subdomain.findMany({
        where: {
          accountId,
          id: { gt: options.afterId },
          ...(options.rootdomain ? { rootZone: { name: options.rootdomain } } : {}),
          ...(options.search ? { label: { contains: options.search } } : {}),
        },
        orderBy: { id: 'asc' },
        take: options.limit,
        include: { rootZone: { select: { name: true } } },
      })
      return rows.map(toSubdomain)
    },

    /**
     * Renews under the subdomain's row lock: `decide` sees the committed expiry and returns the
     * new one and the price (or throws); the price is taken only if the balance covers it.
     */
    async renewSubdomain<E>(
      accountId: string,
      id: number,
      decide: (s: SubdomainRow, zone: ZoneRow) => { expiresAt: Date; priceCents: number },
      onInsufficient: (balance: number, required: number) => E,
    ): Promise<{ subdomain: SubdomainRow; charged: number; balance: number } | null> {
      const r = await inTransaction<
        { subdomain: SubdomainRow; charged: number; balance: number } | null,
        never
      >(db, async (tx) => {
        const s = await lockSubdomain(tx, accountId, id)
        if (!s) return null
        const zone = await tx.rootZone.findUniqueOrThrow({
          where: { id: s.rootZoneId },
          select: { id: true, name: true, priceCents: true, termYears: true },
        })
        const { expiresAt, priceCents } = decide(s, zone)
        if (priceCents > 0) {
          const charged = await tx.account.updateMany({
            where: { id: accountId, balanceCents: { gte: priceCents } },
            data: { balanceCents: { decrement: priceCents } },
          })
          if (charged.count === 0) {
            const acc = await tx.account.findUniqueOrThrow({
              where: { id: accountId },
              select: { balanceCents: true },
            })
            throw onInsufficient(acc.balanceCents, priceCents)
          }
        }
        const row = await tx.subdomain.update({
          where: { id },
          data: { expiresAt },
          include: { rootZone: { select: { name: true } } },
        })
        const acc = await tx.account.findUniqueOrThrow({
          where: { id: accountId },
          select: { balanceCents: true },
        })
        return { subdomain: toSubdomain(row), charged: priceCents, balance: acc.balanceCents }
      })
      return r.ok ? r.value : null
    },
    async deleteSubdomain(id: number): Promise<void> {
      await db.subdomain.deleteMany({ where: { id } })
    },
    /** Subdomains whose grace period ended before `before`. */
    expiredBefore: async (before: Date, limit = 100): Promise<SubdomainRow[]> =>
      (
        await db.subdomain.findMany({
          where: { neverExpires: false, expiresAt: { lt: before } },
          orderBy: { expiresAt: 'asc' },
          take: limit,
          include: { rootZone: { select: { name: true } } },
        })
      ).map(toSubdomain),

    // --- records ------------------------------------------------------------------------------
    async listRecords(
      subdomainId: number,
      options?: { afterId?: number; limit?: number },
    ): Promise<RecordRow[]> {
      const rows = await db.dnsRecord.findMany({
        where: { subdomainId, id: { gt: options?.afterId ?? 0 } },
        orderBy: { id: 'asc' },
        ...(options?.limit ? { take: options.limit } : {}),
      })
      return rows.map(toRecord)
    },
    async getRecord(subdomainId: number, id: number): Promise<RecordRow | null> {
      const row = await db.dnsRecord.findFirst({ where: { id, subdomainId } })
      return row ? toRecord(row) : null
    },

    /**
     * Phase 1 of a record write: under the subdomain's row lock, `plan` sees every record of the
     * subdomain (pending ones included) and returns the change, which is stored as pending.
     */
    async beginRecordChange(
      accountId: string,
      subdomainId: number,
      now: Date,
      plan: (
        s: SubdomainRow,
        records: RecordRow[],
      ) =>
        | { op: 'create'; values: RecordFields }
        | { op: 'update'; id: number; values: RecordFields }
        | { op: 'delete'; id: number },
    ): Promise<{
      subdomain: SubdomainRow
      record: RecordRow
      touched: Array<{ name: string; type: string }>
    } | null> {
      const r = await inTransaction<
        { subdomain: SubdomainRow; record: RecordRow; touched: Array<{ name: string; type: string }> } | null,
        never
      >(db, async (tx) => {
        const s = await lockSubdomain(tx, accountId, subdomainId)
        if (!s) return null
        const records = (await tx.dnsRecord.findMany({ where: { subdomainId }, orderBy: { id: 'asc' } })).map(
          toRecord,
        )
        const change = plan(s, records)
        if (change.op === 'create') {
          const row = await tx.dnsRecord.create({
            data: { subdomainId, ...change.values, state: 'pending_create', pendingSince: now },
          })
          return { subdomain: s, record: toRecord(row), touched: [{ name: row.name, type: row.type }] }
        }
        const current = records.find((x) => x.id === change.id)!
        if (change.op === 'update') {
          const row = await tx.dnsRecord.update({
            where: { id: change.id },
            data: {
              ...change.values,
              state: 'pending_update',
              previous: recordFields(current) as unknown as Prisma.InputJsonValue,
              pendingSince: now,
            },
          })
          return {
            subdomain: s,
            record: toRecord(row),
            touched: [
              { name: current.name, type: current.type },
              { name: row.name, type: row.type },
            ],
          }
        }
        const row = await tx.dnsRecord.update({
          where: { id: change.id },
          data: { state: 'pending_delete', pendingSince: now },
        })
        return { subdomain: s, record: toRecord(row), touched: [{ name: row.name, type: row.type }] }
      })
      return r.ok ? r.value : null
    },

    /**
     * Phase 2: under the subdomain's row lock, hands the desired state of the touched RRsets to
     * `push` (the upstream call) and, only if it succeeds, confirms the pending records in the
     * same transaction. `rollback` first restores stale pending rows (the reconcile job).
     */
    async pushAndSettle(
      subdomainId: number,
      recordIds: number[],
      touched: Array<{ name: string; type: string }>,
      push: (desired: Map<string, RecordRow[]>) => Promise<void>,
      mode: 'confirm' | 'rollback',
      timeoutMs: number,
    ): Promise<void> {
      await db.$transaction(
        async (tx) => {
          await lockSubdomain(tx, null, subdomainId)
          if (mode === 'rollback') await rollbackRows(tx, recordIds)
          const rows = (
            await tx.dnsRecord.findMany({
              where: { subdomainId, OR: touched.map((t) => ({ name: t.name, type: t.type })) },
              orderBy: { id: 'asc' },
            })
          ).map(toRecord)
          const desired = new Map<string, RecordRow[]>()
          for (const t of touched) desired.set(`${t.name} ${t.type}`, [])
          for (const row of rows)
            if (row.state !== 'pending_delete') desired.get(`${row.name} ${row.type}`)?.push(row)
          await push(desired)
          if (mode === 'confirm') await confirmRows(tx, recordIds)
        },
        { maxWait: timeoutMs, timeout: timeoutMs * 2 + 5000 },
      )
    },
    /** Phase 2 failed: undo the pending rows (the upstream never took them). */
    async rollbackRecords(recordIds: number[]): Promise<void> {
      await db.$transaction((tx) => rollbackRows(tx, recordIds))
    },
    async stalePending(before: Date, limit = 100): Promise<RecordRow[]> {
      const rows = await db.dnsRecord.findMany({
        where: { state: { not: 'active' }, pendingSince: { lt: before } },
        orderBy: { pendingSince: 'asc' },
        take: limit,
      })
      return rows.map(toRecord)
    },

    // --- audit ----------------------------------------------------------------------------------
    async audit(entry: {
      accountId: string | null
      credentialId: string | null
      ip: string | null
      operation: string
      target: string | null
      outcome: string
    }): Promise<void> {
      await db.auditLog.create({ data: entry })
    },
  }
}

async function confirmRows(tx: Tx, ids: number[]): Promise<void> {
  await tx.dnsRecord.deleteMany({ where: { id: { in: ids }, state: 'pending_delete' } })
  await tx.dnsRecord.updateMany({
    where: { id: { in: ids }, state: { in: ['pending_create', 'pending_update'] } },
    data: {
      state: 'active',
      previous: Prisma.DbNull,
      pendingSince: null,
    },
  })
}

async function rollbackRows(tx: Tx, ids: number[]): Promise<void> {
  const rows = (await tx.dnsRecord.findMany({ where: { id: { in: ids } } })).map(toRecord)
  for (const row of rows) {
    if (row.state === 'pending_create') await tx.dnsRecord.delete({ where: { id: row.id } })
    else if (row.state === 'pending_update' && row.previous)
      await tx.dnsRecord.update({
        where: { id: row.id },
        data: {
          ...row.previous,
          state: 'active',
          previous: Prisma.DbNull,
          pendingSince: null,
        },
      })
    else if (row.state !== 'active')
      await tx.dnsRecord.update({ where: { id: row.id }, data: { state: 'active', pendingSince: null } })
  }
}

export type Repository = ReturnType<typeof createRepository>
