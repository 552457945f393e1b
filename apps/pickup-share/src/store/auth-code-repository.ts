import type { AuthCodeRecord, AuthCodesPort, NewAuthCode } from '../domain/ports.ts'
import type { Db } from './db.ts'

type Row = Omit<AuthCodeRecord, 'scope'> & { scope: string; codeHash: string }

const toRecord = ({ codeHash: _hash, ...row }: Row): AuthCodeRecord => ({
  ...row,
  scope: row.scope as AuthCodeRecord['scope'],
})

export class AuthCodeRepository implements AuthCodesPort {
  constructor(private readonly db: Db) {}

  async create(c: NewAuthCode): Promise<AuthCodeRecord> {
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
