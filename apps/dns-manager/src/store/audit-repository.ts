import type { AuditStore } from '../domain/ports.ts'
import type { Db } from './db.ts'

export function createAuditRepository(db: Db): AuditStore {
  return {
    async audit(entry) {
      await db.auditLog.create({ data: entry })
    },
    async listAudit(accountId, { limit, beforeId }) {
      const rows = await db.auditLog.findMany({
        where: { accountId, ...(beforeId ? { id: { lt: BigInt(beforeId) } } : {}) },
        orderBy: { id: 'desc' },
        take: limit,
      })
      return rows.map((r) => ({
        ...r,
        id: String(r.id),
        via: r.via === 'web' ? ('web' as const) : ('api' as const),
      }))
    },
  }
}
