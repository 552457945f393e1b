import type { RecordRow, RecordStore, RRsetKey, SubdomainRow } from '../domain/ports.ts'
import { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'
import { inTransaction, lockSubdomain, recordFields, toRecord, type Tx } from './transactions.ts'

export function createRecordRepository(db: Db, schema: string): RecordStore {
  return {
    async listRecords(subdomainId, options) {
      const rows = await db.dnsRecord.findMany({
        where: { subdomainId, id: { gt: options?.afterId ?? 0 } },
        orderBy: { id: 'asc' },
        ...(options?.limit ? { take: options.limit } : {}),
      })
      return rows.map(toRecord)
    },
    async getRecord(subdomainId, id) {
      const row = await db.dnsRecord.findFirst({ where: { id, subdomainId } })
      return row ? toRecord(row) : null
    },

    /** Under the subdomain's row lock, so concurrent writes plan against each other's rows. */
    async beginRecordChange(accountId, subdomainId, now, plan) {
      type Begun = { subdomain: SubdomainRow; record: RecordRow; touched: RRsetKey[] }
      const r = await inTransaction<Begun | null, never>(db, async (tx) => {
        const s = await lockSubdomain(tx, schema, accountId, subdomainId)
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

    async pushAndSettle(subdomainId, recordIds, touched, push, mode, timeoutMs) {
      await db.$transaction(
        async (tx) => {
          await lockSubdomain(tx, schema, null, subdomainId)
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
    async rollbackRecords(recordIds) {
      await db.$transaction((tx) => rollbackRows(tx, recordIds))
    },
    async stalePending(before, limit = 100) {
      const rows = await db.dnsRecord.findMany({
        where: { state: { not: 'active' }, pendingSince: { lt: before } },
        orderBy: { pendingSince: 'asc' },
        take: limit,
      })
      return rows.map(toRecord)
    },
  }
}

async function confirmRows(tx: Tx, ids: number[]): Promise<void> {
  await tx.dnsRecord.deleteMany({ where: { id: { in: ids }, state: 'pending_delete' } })
  await tx.dnsRecord.updateMany({
    where: { id: { in: ids }, state: { in: ['pending_create', 'pending_update'] } },
    data: { state: 'active', previous: Prisma.DbNull, pendingSince: null },
  })
}

async function rollbackRows(tx: Tx, ids: number[]): Promise<void> {
  const rows = (await tx.dnsRecord.findMany({ where: { id: { in: ids } } })).map(toRecord)
  for (const row of rows) {
    if (row.state === 'pending_create') await tx.dnsRecord.delete({ where: { id: row.id } })
    else if (row.state === 'pending_update' && row.previous)
      await tx.dnsRecord.update({
        where: { id: row.id },
        data: { ...row.previous, state: 'active', previous: Prisma.DbNull, pendingSince: null },
      })
    else if (row.state !== 'active')
      await tx.dnsRecord.update({ where: { id: row.id }, data: { state: 'active', pendingSince: null } })
  }
}
