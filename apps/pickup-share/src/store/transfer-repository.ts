import { Prisma } from '../generated/prisma/client.ts'
import type { Db } from './db.ts'

export interface TransferKey {
  shareId: string
  path: string
  receiver: string
}

/**
 * Counted downloads that may come in several requests (`download_transfer`). Every decision is
 * one statement: joining is the conditional `room >= bytes` (re-checked under the row lock);
 * opening inserts a row that is not paid yet, which a partial unique index allows once per
 * receiver and file, so parallel first requests cannot open (and pay) twice; it is paid in the
 * transaction that spends the download (ShareRepository.decrementRemaining).
 */
export class TransferRepository {
  constructor(private readonly db: Db) {}

  /**
   * Reserves `bytes` in a live, paid, incomplete transfer of `key` with room for them; its id,
   * or null when none has room.
   */
  async join(key: TransferKey, bytes: number, now: Date): Promise<string | null> {
    const b = BigInt(bytes)
    const live = { ...key, paid: true, complete: false, expiresAt: { gt: now } }
    const candidates = await this.db.downloadTransfer.findMany({
      where: { ...live, room: { gte: b } },
      select: { id: true },
      orderBy: { openedAt: 'asc' },
    })
    for (const { id } of candidates) {
      const { count } = await this.db.downloadTransfer.updateMany({
        where: { id, ...live, room: { gte: b } },
        data: { room: { decrement: b }, reserved: { increment: b } },
      })
      if (count === 1) return id
    }
    return null
  }

  /**
   * Reserves `bytes` in transfer `id` (paid, incomplete, live, with room): the opener's own
   * request, right after paying. False when requests of the same receiver (on another replica)
   * took the room first.
   */
  async reserveIn(id: string, bytes: number, now: Date): Promise<boolean> {
    const b = BigInt(bytes)
    const { count } = await this.db.downloadTransfer.updateMany({
      where: { id, paid: true, complete: false, expiresAt: { gt: now }, room: { gte: b } },
      data: { room: { decrement: b }, reserved: { increment: b } },
    })
    return count === 1
  }

  /**
   * Starts opening a transfer: `opened` when this caller holds the opening (then it pays and
   * calls paid(), or deletes it); `busy` when another request of the same receiver is opening
   * one; `gone` when the share is no longer there. An opening left behind by a process that died
   * (older than `staleBefore`) is removed first.
   */
  async beginOpening(
    id: string,
    key: TransferKey,
    budget: number,
    now: Date,
    expiresAt: Date,
    staleBefore: Date,
  ): Promise<'opened' | 'busy' | 'gone'> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await this.db.downloadTransfer.create({
          data: {
            id,
            ...key,
            paid: false,
            budget: BigInt(budget),
            room: BigInt(budget),
            openedAt: now,
            expiresAt,
          },
        })
        return 'opened'
      } catch (err) {
        const code = err instanceof Prisma.PrismaClientKnownRequestError ? err.code : undefined
        // The share was deleted meanwhile (its last download ended).
        if (code === 'P2003') return 'gone'
        if (code !== 'P2002') throw err
        const { count } = await this.db.downloadTransfer.deleteMany({
          where: { ...key, paid: false, openedAt: { lt: staleBefore } },
        })
        if (count === 0) return 'busy'
      }
    }
    return 'busy'
  }

  /** Whether some request of `key` is opening a transfer right now. */
  async opening(key: TransferKey): Promise<boolean> {
    return (await this.db.downloadTransfer.count({ where: { ...key, paid: false } })) > 0
  }

  async delete(id: string): Promise<void> {
    await this.db.downloadTransfer.deleteMany({ where: { id } })
  }

  /** Removes an opening that was not paid (a paid transfer stays). */
  async deleteUnpaid(id: string): Promise<void> {
    await this.db.downloadTransfer.deleteMany({ where: { id, paid: false } })
  }

  /**
   * A request of the transfer ended: `reserved` bytes were held, `written` of them went out (the
   * rest is room again). Returns whether the transfer is now complete: its last byte went out
   * and at least the file's size in all.
   */
  async finish(id: string, reserved: number, written: number, sentLastByte: boolean, size: number) {
    const unused = BigInt(Math.max(0, reserved - written))
    const row = await this.db.downloadTransfer
      .update({
        where: { id },
        data: {
          reserved: { decrement: BigInt(reserved) },
          written: { increment: BigInt(written) },
          room: { increment: unused },
          ...(sentLastByte ? { reachedEnd: true } : {}),
        },
        select: { reachedEnd: true, written: true, complete: true },
      })
      .catch((err: unknown) => {
        // The share (and with it the transfer) was deleted meanwhile.
        if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2025') return null
        throw err
      })
    if (!row) return false
    if (row.complete) return true
    if (!row.reachedEnd || row.written < BigInt(size)) return false
    await this.db.downloadTransfer.updateMany({ where: { id }, data: { complete: true } })
    return true
  }

  /**
   * Whether `key`'s receiver may still come back for free: a live, paid, incomplete transfer, or
   * one being opened right now (younger than `staleBefore`). The opening counts because it has
   * already spent the share's last download: a parallel request of the same receiver that reads
   * the share between that and the payment must go on to join it, not be told the share is gone.
   */
  async hasLive(key: TransferKey, now: Date, staleBefore: Date): Promise<boolean> {
    const n = await this.db.downloadTransfer.count({
      where: {
        ...key,
        OR: [
          { paid: true, complete: false, expiresAt: { gt: now } },
          { paid: false, openedAt: { gte: staleBefore } },
        ],
      },
    })
    return n > 0
  }

  /** Live transfers of a share that may still come back (they keep an exhausted share). */
  async liveOfShare(shareId: string, now: Date): Promise<number> {
    return this.db.downloadTransfer.count({ where: { shareId, complete: false, expiresAt: { gt: now } } })
  }
}
