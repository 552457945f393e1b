import { Prisma } from '../generated/prisma/client.ts'
import { type AllowancesPort, EVERYONE, onStore } from '../domain/ports.ts'
import type { Db } from './db.ts'

/**
 * Bytes reserved by unshared upload permissions, per client and for everyone ("*"). A reservation
 * is one conditional UPDATE (`reserved_bytes <= limit - size`, which Postgres re-checks under the
 * row lock), so parallel permissions never overshoot a limit; a missing row is created first.
 */
export class AllowanceRepository implements AllowancesPort {
  constructor(private readonly db: Db) {}

  /**
   * Adds `bytes` to `key` when the sum stays within `limit` and, with `share`, within `share` too
   * unless `key` holds nothing yet (one reservation of any size up to `limit` is always possible);
   * false (nothing changed) otherwise. One conditional UPDATE either way.
   */
  async reserve(key: string, bytes: number, limit: number, share?: number): Promise<boolean> {
    if (bytes > limit) return false
    const b = BigInt(bytes)
    const withinShare =
      share === undefined
        ? {}
        : { OR: [{ reservedBytes: { lte: BigInt(share) - b } }, { reservedBytes: 0n }] }
    for (let attempt = 0; attempt < 5; attempt++) {
      const { count } = await this.db.uploadAllowance.updateMany({
        where: { key, reservedBytes: { lte: BigInt(limit) - b }, ...withinShare },
        data: { reservedBytes: { increment: b }, updatedAt: new Date() },
      })
      if (count === 1) return true
      const row = await this.db.uploadAllowance.findUnique({ where: { key } })
      if (row) {
        if (row.reservedBytes + b > BigInt(limit)) return false
        if (share !== undefined && row.reservedBytes > 0n && row.reservedBytes + b > BigInt(share))
          return false
        continue // the row was created after our update looked: try it again
      }
      try {
        await this.db.uploadAllowance.create({ data: { key, reservedBytes: b } })
        return true
      } catch (err) {
        // Another request created the row meanwhile: reserve through the conditional update.
        if (!(err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002')) throw err
      }
    }
    return false
  }

  /** Gives `bytes` back (never below zero). */
  async release(key: string, bytes: number): Promise<void> {
    const b = BigInt(bytes)
    const { count } = await this.db.uploadAllowance.updateMany({
      where: { key, reservedBytes: { gte: b } },
      data: { reservedBytes: { decrement: b }, updatedAt: new Date() },
    })
    if (count === 0)
      await this.db.uploadAllowance.updateMany({
        where: { key, reservedBytes: { lt: b } },
        data: { reservedBytes: 0n, updatedAt: new Date() },
      })
  }

  async reserved(key: string): Promise<number> {
    const row = await this.db.uploadAllowance.findUnique({ where: { key } })
    return row ? Number(row.reservedBytes) : 0
  }

  /**
   * Brings rows back in line with the permissions that really hold bytes (a process that died
   * between reserving and recording a permission leaves bytes no permission will give back).
   * Only rows unchanged for `quietMs`, each conditionally on being still unchanged, so no
   * reservation in flight is counted out. Empty rows are deleted. Returns the rows corrected.
   */
  async repair(quietMs: number, now: Date): Promise<number> {
    const quiet = await this.db.uploadAllowance.findMany({
      where: { updatedAt: { lt: new Date(now.getTime() - quietMs) } },
    })
    if (quiet.length === 0) return 0
    const held = await this.db.issuedUpload.groupBy({
      by: ['clientKey', 'store'],
      where: { shareId: null, clientKey: { not: null } },
      _sum: { size: true },
    })
    // What the permissions really hold, under every key: everyone, each client, each client's store.
    const truths = new Map<string, bigint>()
    const add = (key: string, bytes: bigint) => truths.set(key, (truths.get(key) ?? 0n) + bytes)
    for (const g of held) {
      const bytes = g._sum.size ?? 0n
      add(EVERYONE, bytes)
      add(g.clientKey!, bytes)
      add(onStore(g.store, g.clientKey!), bytes)
    }
    let corrected = 0
    for (const row of quiet) {
      const truth = truths.get(row.key) ?? 0n
      const unchanged = { key: row.key, updatedAt: row.updatedAt, reservedBytes: row.reservedBytes }
      if (truth === 0n && row.reservedBytes === 0n) {
        await this.db.uploadAllowance.deleteMany({ where: unchanged })
      } else if (truth !== row.reservedBytes) {
        const { count } = await this.db.uploadAllowance.updateMany({
          where: unchanged,
          data: { reservedBytes: truth, updatedAt: now },
        })
        corrected += count
      }
    }
    return corrected
  }
}
