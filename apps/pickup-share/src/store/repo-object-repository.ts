import { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'

export interface RepoObjectRecord {
  pathname: string
  commitSha: string
  blobSha: string
  size: number
  createdAt: Date
}

/** Which commit (and blob) holds each file of a git repository storage instance. */
export class RepoObjectRepository {
  constructor(
    private readonly db: Db,
    private readonly storeInstance: string,
  ) {}

  /** false when the pathname is taken already. */
  async record(o: Omit<RepoObjectRecord, 'createdAt'>): Promise<boolean> {
    try {
      await this.db.repoObject.create({
        data: { storeInstance: this.storeInstance, ...o, size: BigInt(o.size) },
      })
      return true
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return false
      throw err
    }
  }

  async find(pathname: string): Promise<RepoObjectRecord | null> {
    const row = await this.db.repoObject.findUnique({
      where: { storeInstance_pathname: { storeInstance: this.storeInstance, pathname } },
    })
    return row ? { ...row, size: Number(row.size) } : null
  }

  async latest(): Promise<RepoObjectRecord | null> {
    const row = await this.db.repoObject.findFirst({
      where: { storeInstance: this.storeInstance },
      orderBy: { createdAt: 'desc' },
    })
    return row ? { ...row, size: Number(row.size) } : null
  }

  async delete(pathname: string): Promise<void> {
    await this.db.repoObject.deleteMany({ where: { storeInstance: this.storeInstance, pathname } })
  }

  async list(): Promise<RepoObjectRecord[]> {
    const rows = await this.db.repoObject.findMany({ where: { storeInstance: this.storeInstance } })
    return rows.map((r) => ({ ...r, size: Number(r.size) }))
  }
}
