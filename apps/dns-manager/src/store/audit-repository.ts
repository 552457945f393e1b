import type { AuditStore } from '../domain/ports.ts'
import type { Db } from './db.ts'

export function createAuditRepository(db: Db): AuditStore {
  return {
    async audit(entry) {
      await db.auditLog.create({ data: entry })
    },
  }
}
