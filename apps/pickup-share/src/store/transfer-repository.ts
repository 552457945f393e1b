import { Prisma } from '../generated/prisma/client.ts'
import type { TransferKey, TransfersPort } from '../domain/ports.ts'
import type { Db } from './db.ts'

/**
 * Counted downloads that may come in several requests (`download_transfer`). Every decision is
 * one statement: joining is the conditional `room >= bytes` (re-checked under the row lock),
 * and the bytes a request sends are drawn from the room in leases as they go out;
 * opening inserts a row that is not paid yet, which a partial unique index allows once per
 * receiver and file, so parallel first requests cannot open (and pay) twice; it is paid in the
 * transaction that spends the download (ShareRepository.decrementRemaining).
 */
export class TransferRepository implements TransfersPort {
  constructor(private readonly db: Db) {}

  /**
   * Joins a live, paid transfer of `key` whose room holds the request's `bytes` (checked under
   * the row lock), drawing its first `lease` from the room; the transfer's id, or null when none
   * has room.
   */
  async join(key: TransferKey, bytes: number, lease: number, now: Date): Promise<string | null> {
    const b = BigInt(bytes)
    const live = { ...key, paid: true, expiresAt: { gt: now } }
    const candidates = await this.db.downloadTransfer.findMany({
      where: { ...live, room: { gte: b } },
      select: { id: true },
      orderBy: { openedAt: 'asc' },
    })
    for (const { id } of candidates) {
      if (await this.draw(id, b, BigInt(lease), now)) return id
    }
    return null
  }

  /**
   * The opener's own request, right after paying: as join() for transfer `id`. False when
   * requests of the same receiver (on another replica) took the room first.
   */
  reserveIn(id: string, bytes: number, lease: number, now: Date): Promise<boolean> {
    return this.draw(id, BigInt(bytes), BigInt(lease), now)
  }

  private async draw(id: string, bytes: bigint, lease: bigint, now: Date): Promise<boolean> {
    const { count } = await this.db.downloadTransfer.updateMany({
      where: { id, paid: true, expiresAt: { gt: now }, room: { gte: bytes } },
      data: { room: { decrement: lease }, reserved: { increment: lease } },
    })
    return count === 1
  }

  /**
   * A running request's next lease: up to `want` bytes of the room (fewer when less is left, 0
   * when the budget is spent), by conditional UPDATEs so parallel requests never overdraw it. A request already admitted keeps drawing after the window ended: the window decides
   * which requests join, not how long an admitted one may take.
   */
  async lease(id: string, want: number): Promise<number> {
    let ask = BigInt(want)
    // Conditional UPDATEs (`room >= ask`): the whole lease, else what is left, re-read when a
    // parallel request took some of it meanwhile.
    for (let attempt = 0; attempt < 5 && ask > 0n; attempt++) {
      const { count } = await this.db.downloadTransfer.updateMany({
        where: { id, room: { gte: ask } },
        data: { room: { decrement: ask }, reserved: { increment: ask } },
      })
      if (count === 1) return Number(ask)
      const row = await this.db.downloadTransfer.findUnique({ where: { id }, select: { room: true } })
      if (!row || row.room <= 0n) return 0
      ask = row.room < ask ? row.room : ask
    }
    return 0
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

  /** Removes transfer `id` when nothing was sent and only its opener's `leased` bytes are drawn. */
  async deleteUntouched(id: string, leased: number): Promise<boolean> {
    const { count } = await this.db.downloadTransfer.deleteMany({
      where: { id, written: 0, reserved: BigInt(leased) },
    })
    return count === 1
  }

  /** Removes an opening that was not paid (a paid transfer stays). */
  async deleteUnpaid(id: string): Promise<void> {
    await this.db.downloadTransfer.deleteMany({ where: { id, paid: false } })
  }

  /**
   * A request of the transfer ended: `leased` bytes were drawn from the room for it, `written`
   * of them went out; the rest is room again.
   */
  async finish(id: string, leased: number, written: number): Promise<void> {
    const sent = Math.min(written, leased)
    await this.db.downloadTransfer.updateMany({
      where: { id },
      data: {
        reserved: { decrement: BigInt(leased) },
        written: { increment: BigInt(sent) },
        room: { increment: BigInt(leased - sent) },
      },
    })
  }

  /**
   * Whether `key`'s receiver may still come back for free: a live, paid transfer with room, or
   * one being opened right now (younger than `staleBefore`). The opening counts because it has
   * already spent the share's last download: a parallel request of the same receiver that reads
   * the share between that and the payment must go on to join it, not be told the share is gone.
   */
  async hasLive(key: TransferKey, now: Date, staleBefore: Date): Promise<boolean> {
    const n = await this.db.downloadTransfer.count({
      where: {
        ...key,
        OR: [
          { paid: true, expiresAt: { gt: now }, room: { gt: 0 } },
          { paid: false, openedAt: { gte: staleBefore } },
        ],
      },
    })
    return n > 0
  }

  /**
   * Transfers of a share that may still come back (they keep an exhausted share): within their
   * window, with room left. (Running requests are the download gate's count in flight.)
   */
  async liveOfShare(shareId: string, now: Date): Promise<number> {
    return this.db.downloadTransfer.count({ where: { shareId, expiresAt: { gt: now }, room: { gt: 0 } } })
  }
}
