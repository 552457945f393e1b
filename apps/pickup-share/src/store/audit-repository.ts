import type { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'

export interface AuditEntry {
  id: string
  at: Date
  actor: string
  action: string
  target: string | null
  ip: string | null
  details: Record<string, unknown>
}

export class AuditRepository {
  constructor(private readonly db: Db) {}

  async append(e: {
    actor: string
    action: string
    target?: string | null
    ip?: string | null
    details?: Record<string, unknown>
  }): Promise<void> {
    await this.db.auditLog.create({
      data: {
        actor: e.actor,
        action: e.action,
        target: e.target ?? null,
        ip: e.ip ?? null,
        details: (e.details ?? {}) as Prisma.InputJsonValue,
      },
    })
  }

  async list(options: { limit: number; action?: string | undefined }): Promise<AuditEntry[]> {
    const rows = await this.db.auditLog.findMany({
      where: options.action ? { action: options.action } : {},
      orderBy: { id: 'desc' },
      take: options.limit,
    })
    return rows.map((r) => ({ ...r, id: r.id.toString(), details: r.details as Record<string, unknown> }))
  }
}
