import type { Db } from './db.ts'

export interface AuthCodeRecord {
  id: string
  hint: string
  note: string | null
  scope: 'downloads' | 'size' | 'both'
  createdAt: Date
  expiresAt: Date
  usedAt: Date | null
  usedByShareId: string | null
  usedByShareCode: string | null
  revokedAt: Date | null
}

type Row = Omit<AuthCodeRecord, 'scope'> & { scope: string; codeHash: string }

const toRecord = ({ codeHash: _hash, ...row }: Row): AuthCodeRecord => ({
  ...row,
  scope: row.scope as AuthCodeRecord['scope'],
})

export class AuthCodeRepository {
  constructor(private readonly db: Db) {}

  async create(c: {
    id: string
    codeHash: string
    hint: string
    note: string | null
    scope: string
    expiresAt: Date
  }) {
    return toRecord(await this.db.authCode.create({ data: c }))
  }

  async findByHash(codeHash: string): Promise<AuthCodeRecord | null> {
    const row = await this.db.authCode.findUnique({ where: { codeHash } })
    return row ? toRecord(row) : null
  }

  async findById(id: string): Promise<AuthCodeRecord | null> {
    const row = await this.db.authCode.findUnique({ where: { id } })
    return row ? toRecord(row) : null
  }

  async list(limit: number): Promise<AuthCodeRecord[]> {
    const rows = await this.db.authCode.findMany({
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
      take: limit,
    })
    return rows.map(toRecord)
  }

  /** Revokes an unused code; false when it was already used or revoked. */
  async revoke(id: string, now: Date): Promise<boolean> {
    const { count } = await this.db.authCode.updateMany({
      where: { id, usedAt: null, revokedAt: null },
      data: { revokedAt: now },
    })
    return count === 1
  }
}
