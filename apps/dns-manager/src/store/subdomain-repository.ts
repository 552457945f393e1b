import type { CreateSubdomainOutcome, RecordRow, SubdomainRow, SubdomainStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
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

export function createSubdomainRepository(db: Db, schema: string): SubdomainStore {
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

    async getSubdomain(accountId, id) {
      const row = await db.subdomain.findFirst({
        where: { id, ...(accountId ? { accountId } : {}) },
        include: withZoneName,
      })
      return row ? toSubdomain(row) : null
    },
    async findSubdomainByName(fullDomain) {
      const row = await db.subdomain.findUnique({ where: { fullDomain }, include: withZoneName })
      return row ? toSubdomain(row) : null
    },
    async listSubdomains(accountId, options) {
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
