import { preparedStatement } from '@quartet/core/db'
import type { RecordRow, RecordStore, RRsetKey, SubdomainRow } from '../domain/ports.ts'
import { Prisma } from '../generated/prisma/client.ts'
import { type Db, rawOf } from './db.ts'
import { inTransaction, lockSubdomain, recordFields, toRecord, type Tx } from './transactions.ts'

/** A record row as plain SQL reads it (the columns toRecord expects), of the table under `r`. */
const RECORD_COLUMNS = `r.id, r.subdomain_id AS "subdomainId", r.name, r.type, r.content, r.ttl, r.priority,
  r.weight, r.port, r.flag, r.tag, r.state, r.previous, r.pending_since AS "pendingSince",
  r.created_at AS "createdAt", r.updated_at AS "updatedAt"`

type RecordSqlRow = Parameters<typeof toRecord>[0]

export function createRecordRepository(db: Db, schema: string): RecordStore {
  const { pool, schema: q } = rawOf(db)
  // The record page clients poll: ownership and rows in one statement. The LEFT JOIN keeps one
  // row (of NULLs) for an owned subdomain without records; no row at all means not the account's.
  const ownRecords = preparedStatement<RecordSqlRow & { owned: number }>(
    pool,
    'dns_manager_own_records',
    `SELECT s.id AS owned, ${RECORD_COLUMNS}
       FROM ${q}."subdomain" s LEFT JOIN ${q}."dns_record" r ON r.subdomain_id = s.id AND r.id > $3
      WHERE s.id = $1 AND s.account_id = $2::uuid
      ORDER BY r.id ASC`,
  )
  return {
    async listOwnRecords(accountId, subdomainId, afterId) {
      const rows = await ownRecords([subdomainId, accountId, afterId])
      if (rows.length === 0) return null
      const records: RecordRow[] = []
      for (const { owned: _, ...row } of rows) if (row.id !== null) records.push(toRecord(row))
      return records
    },
    /** Every read of a record page: plain SQL on the pool (clients poll it). */
    async listRecords(subdomainId, options) {
      const { rows } = await pool.query<RecordSqlRow>(
        `SELECT ${RECORD_COLUMNS} FROM ${q}."dns_record" r WHERE r.subdomain_id = $1 AND r.id > $2 ORDER BY r.id ASC${
          options?.limit ? ' LIMIT $3' : ''
        }`,
        options?.limit
          ? [subdomainId, options.afterId ?? 0, options.limit]
          : [subdomainId, options?.afterId ?? 0],
      )
      return rows.map(toRecord)
    },
    async getRecord(subdomainId, id) {
      const row = await db.dnsRecord.findFirst({ where: { id, subdomainId } })
      return row ? toRecord(row) : null
    },

    /**
     * Under the subdomain's row lock, so concurrent writes plan against each other's rows; the
     * lock ends with this short transaction, before any upstream call.
     */
    async beginRecordChange(accountId, subdomainId, now, plan) {
      type Begun = { subdomain: SubdomainRow; record: RecordRow; touched: RRsetKey[]; recordIds: number[] }
      const r = await inTransaction<Begun | null, never>(db, async (tx) => {
        const s = await lockSubdomain(tx, schema, accountId, subdomainId)
        if (!s) return null
        const records = (await tx.dnsRecord.findMany({ where: { subdomainId }, orderBy: { id: 'asc' } })).map(
          toRecord,
        )
        const change = plan(s, records)
        await tx.subdomain.updateMany({ where: { id: subdomainId }, data: { dnsVersion: { increment: 1 } } })
        // The other records of the RRset taking its new TTL: pending updates of this write.
        const rrsetTtl = change.op === 'delete' ? undefined : change.rrsetTtl
        const siblings = rrsetTtl?.siblings ?? []
        for (const id of siblings) {
          const sibling = records.find((x) => x.id === id)!
          await tx.dnsRecord.update({
            where: { id },
            data: {
              ttl: rrsetTtl!.ttl,
              state: 'pending_update',
              previous: recordFields(sibling) as unknown as Prisma.InputJsonValue,
              pendingSince: now,
            },
          })
        }
        if (change.op === 'create') {
          const row = await tx.dnsRecord.create({
            data: { subdomainId, ...change.values, state: 'pending_create', pendingSince: now },
          })
          return {
            subdomain: s,
            record: toRecord(row),
            touched: [{ name: row.name, type: row.type }],
            recordIds: [row.id, ...siblings],
          }
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
            recordIds: [row.id, ...siblings],
          }
        }
        const row = await tx.dnsRecord.update({
          where: { id: change.id },
          data: { state: 'pending_delete', pendingSince: now },
        })
        return {
          subdomain: s,
          record: toRecord(row),
          touched: [{ name: row.name, type: row.type }],
          recordIds: [row.id],
        }
      })
      return r.ok ? r.value : null
    },

    async settleRecords(recordIds, outcome) {
      if (recordIds.length === 0) return 0
      return db.$transaction((tx) =>
        outcome === 'confirm' ? confirmRows(tx, recordIds) : rollbackRows(tx, recordIds),
      )
    },
    async accountsOfRecords(recordIds) {
      if (recordIds.length === 0) return []
      const { rows } = await pool.query<{ accountId: string }>(
        `SELECT DISTINCT s.account_id AS "accountId"
           FROM ${q}."dns_record" r JOIN ${q}."subdomain" s ON s.id = r.subdomain_id
          WHERE r.id = ANY($1::int[])`,
        [recordIds],
      )
      return rows.map((row) => row.accountId)
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

/** Pending rows become the state; the desired DNS state is what was pushed, so the version stays. */
async function confirmRows(tx: Tx, ids: number[]): Promise<number> {
  const deleted = await tx.dnsRecord.deleteMany({ where: { id: { in: ids }, state: 'pending_delete' } })
  const updated = await tx.dnsRecord.updateMany({
    where: { id: { in: ids }, state: { in: ['pending_create', 'pending_update'] } },
    data: { state: 'active', previous: Prisma.DbNull, pendingSince: null },
  })
  return deleted.count + updated.count
}

/** Pending rows are undone; the desired DNS state changed back, so their subdomains get a new version. */
async function rollbackRows(tx: Tx, ids: number[]): Promise<number> {
  const rows = (await tx.dnsRecord.findMany({ where: { id: { in: ids } } })).map(toRecord)
  let pending = 0
  for (const row of rows) {
    if (row.state !== 'active') pending++
    if (row.state === 'pending_create') await tx.dnsRecord.delete({ where: { id: row.id } })
    else if (row.state === 'pending_update' && row.previous)
      await tx.dnsRecord.update({
        where: { id: row.id },
        data: { ...row.previous, state: 'active', previous: Prisma.DbNull, pendingSince: null },
      })
    else if (row.state !== 'active')
      await tx.dnsRecord.update({ where: { id: row.id }, data: { state: 'active', pendingSince: null } })
  }
  const subdomains = [...new Set(rows.map((r) => r.subdomainId))]
  if (subdomains.length)
    await tx.subdomain.updateMany({
      where: { id: { in: subdomains } },
      data: { dnsVersion: { increment: 1 } },
    })
  return pending
}
