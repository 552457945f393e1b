import { preparedStatement } from '@quartet/core/db'
import type {
  CreateSubdomainOutcome,
  RecordRow,
  SubdomainListRow,
  SubdomainRow,
  SubdomainStore,
} from '../domain/ports.ts'
import { type Db, rawOf } from './db.ts'
import {
  Abort,
  inTransaction,
  lockAccount,
  lockSubdomain,
  toRecord,
  toSubdomain,
  withZoneName,
  zoneSelect,
} from './transactions.ts'

type Refusal = Exclude<CreateSubdomainOutcome, { ok: true }>

/** A subdomain row with its zone's name, as plain SQL reads it (the columns toSubdomain expects). */
const SUBDOMAIN_COLUMNS = `s.id, s.account_id AS "accountId", s.root_zone_id AS "rootZoneId", s.label,
  s.full_domain AS "fullDomain", s.suspended, s.never_expires AS "neverExpires", s.expires_at AS "expiresAt",
  s.created_at AS "createdAt", s.updated_at AS "updatedAt", s.state, s.state_since AS "stateSince",
  s.dns_version AS "dnsVersion", z.name AS rootdomain`

/** The columns of a list (SubdomainListRow). */
const LIST_COLUMNS = `s.id, s.label, s.full_domain AS "fullDomain", s.suspended, s.never_expires AS "neverExpires",
  s.expires_at AS "expiresAt", s.created_at AS "createdAt", s.updated_at AS "updatedAt", z.name AS rootdomain`

type SubdomainSqlRow = Omit<SubdomainRow, 'state'> & { state: string }
const fromSql = (row: SubdomainSqlRow): SubdomainRow => ({
  ...row,
  state: row.state as SubdomainRow['state'],
})

export function createSubdomainRepository(db: Db, schema: string): SubdomainStore {
  const { pool, schema: q } = rawOf(db)
  const from = `${q}."subdomain" s JOIN ${q}."root_zone" z ON z.id = s.root_zone_id`
  // The reads clients poll, prepared once per connection.
  const ownSubdomain = preparedStatement<SubdomainSqlRow>(
    pool,
    'dns_manager_own_subdomain',
    `SELECT ${SUBDOMAIN_COLUMNS} FROM ${from} WHERE s.id = $1 AND s.account_id = $2::uuid`,
  )
  const subdomainPage = preparedStatement<SubdomainListRow>(
    pool,
    'dns_manager_subdomain_page',
    `SELECT ${LIST_COLUMNS} FROM ${from} WHERE s.account_id = $1::uuid AND s.id > $2 ORDER BY s.id ASC LIMIT $3`,
  )
  return {
    /** In one transaction under the account's row lock: 10 parallel creates with 2 free slots give exactly 2. */
    async createSubdomain(input) {
      const r = await inTransaction<SubdomainRow, Refusal>(db, async (tx) => {
        const account = await lockAccount(tx, schema, input.accountId)
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
          include: withZoneName,
        })
        return toSubdomain(row)
      })
      return r.ok ? { ok: true, subdomain: r.value } : r.value
    },

    /** Every read of a subdomain's records asks this first (ownership): plain SQL on the pool. */
    async getSubdomain(accountId, id) {
      const rows = accountId
        ? await ownSubdomain([id, accountId])
        : (
            await pool.query<SubdomainSqlRow>(`SELECT ${SUBDOMAIN_COLUMNS} FROM ${from} WHERE s.id = $1`, [
              id,
            ])
          ).rows
      return rows[0] ? fromSql(rows[0]) : null
    },
    async findSubdomainByName(fullDomain) {
      const row = await db.subdomain.findUnique({ where: { fullDomain }, include: withZoneName })
      return row ? toSubdomain(row) : null
    },
    /** A page of the account's subdomains; the unfiltered page clients poll in plain SQL on the pool. */
    async listSubdomains(accountId, options) {
      if (!options.rootdomain && !options.search) {
        return subdomainPage([accountId, options.afterId, options.limit])
      }
      const rows = await db.subdomain.findMany({
        where: {
          accountId,
          id: { gt: options.afterId },
          ...(options.rootdomain ? { rootZone: { name: options.rootdomain } } : {}),
          ...(options.search ? { label: { contains: options.search } } : {}),
        },
        orderBy: { id: 'asc' },
        take: options.limit,
        include: withZoneName,
      })
      return rows.map(toSubdomain)
    },

    async renewSubdomain(accountId, id, decide, onInsufficient) {
      const r = await inTransaction<
        { subdomain: SubdomainRow; charged: number; balance: number } | null,
        never
      >(db, async (tx) => {
        const s = await lockSubdomain(tx, schema, accountId, id)
        if (!s) return null
        const zone = await tx.rootZone.findUniqueOrThrow({ where: { id: s.rootZoneId }, select: zoneSelect })
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
        const row = await tx.subdomain.update({ where: { id }, data: { expiresAt }, include: withZoneName })
        const acc = await tx.account.findUniqueOrThrow({
          where: { id: accountId },
          select: { balanceCents: true },
        })
        return { subdomain: toSubdomain(row), charged: priceCents, balance: acc.balanceCents }
      })
      return r.ok ? r.value : null
    },
    async beginRelease(accountId, id, now) {
      const r = await inTransaction<{ subdomain: SubdomainRow; records: RecordRow[] } | 'busy' | null, never>(
        db,
        async (tx) => {
          const s = await lockSubdomain(tx, schema, accountId, id)
          if (!s) return null
          if (s.state !== 'active') return 'busy'
          const row = await tx.subdomain.update({
            where: { id },
            data: { state: 'releasing', stateSince: now, dnsVersion: { increment: 1 } },
            include: withZoneName,
          })
          const records = await tx.dnsRecord.findMany({ where: { subdomainId: id }, orderBy: { id: 'asc' } })
          return { subdomain: toSubdomain(row), records: records.map(toRecord) }
        },
      )
      return r.ok ? r.value : null
    },
    async finishRelease(id) {
      await db.subdomain.deleteMany({ where: { id, state: 'releasing' } })
    },
    async abortRelease(id) {
      await db.subdomain.updateMany({
        where: { id, state: 'releasing' },
        data: { state: 'active', stateSince: null, dnsVersion: { increment: 1 } },
      })
    },
    staleReleasing: async (before, limit = 100) =>
      (
        await db.subdomain.findMany({
          where: { state: 'releasing', stateSince: { lt: before } },
          orderBy: { stateSince: 'asc' },
          take: limit,
          include: withZoneName,
        })
      ).map(toSubdomain),
    expiredBefore: async (before, limit = 100) =>
      (
        await db.subdomain.findMany({
          where: { neverExpires: false, expiresAt: { lt: before }, state: 'active' },
          orderBy: { expiresAt: 'asc' },
          take: limit,
          include: withZoneName,
        })
      ).map(toSubdomain),
  }
}
