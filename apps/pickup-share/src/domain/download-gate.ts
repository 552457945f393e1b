import type { Clock } from '@quartet/core/clock'
import type { KeyValueStore } from '@quartet/core/kv'
import type { ShareRepository } from '../store/share-repository.ts'

const counterKey = (shareId: string) => `dl:${shareId}`
const inflightKey = (shareId: string) => `inflight:${shareId}`
const DAY = 86_400_000

/**
 * Reserves one download of a counted share before any byte is sent. The kv counter
 * (`decrIfPositive`) is the fast gate every replica shares; Postgres is the durable record and
 * has the last word with its own conditional decrement, so a kv that lost or over-counted its
 * value can never let more downloads through than the share allows. A missing kv counter is
 * re-seeded from Postgres (never reset to the maximum).
 */
export class DownloadGate {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly shares: ShareRepository,
    private readonly clock: Clock,
  ) {}

  async seed(shareId: string, remaining: number, expiresAt: Date): Promise<void> {
    await this.kv.set(counterKey(shareId), String(remaining), this.ttl(expiresAt))
  }

  /** The downloads left after this one, or null when none could be reserved. */
  async reserve(shareId: string, expiresAt: Date): Promise<number | null> {
    const key = counterKey(shareId)
    let left = await this.kv.decrIfPositive(key)
    if (left === null && (await this.kv.get(key)) === null) {
      const durable = await this.shares.remainingOf(shareId, this.clock.now())
      if (durable === null || durable <= 0) return null
      await this.kv.setIfAbsent(key, String(durable), this.ttl(expiresAt))
      left = await this.kv.decrIfPositive(key)
    }
    if (left === null) return null
    let after: number | null
    try {
      after = await this.shares.decrementRemaining(shareId, this.clock.now())
    } catch (err) {
      await this.kv.del(key) // re-seed from the durable record next time
      throw err
    }
    if (after === null) return null
    await this.kv.incrWithTtl(inflightKey(shareId), 1, this.ttl(expiresAt))
    return after
  }

  /** Gives a reservation back (the store failed before the first byte). */
  async refund(shareId: string): Promise<void> {
    await this.shares.refund(shareId)
    // Dropping the kv counter makes the next reservation re-seed from Postgres.
    await this.kv.del(counterKey(shareId))
    await this.kv.incrWithTtl(inflightKey(shareId), -1, DAY)
  }

  /** A reserved download ended; true when it was the last stream of an exhausted share. */
  async finish(shareId: string): Promise<boolean> {
    const inflight = await this.kv.incrWithTtl(inflightKey(shareId), -1, DAY)
    if (inflight > 0) return false
    const share = await this.shares.findById(shareId)
    return share !== null && share.exhaustedAt !== null
  }

  async forget(shareId: string): Promise<void> {
    await Promise.all([this.kv.del(counterKey(shareId)), this.kv.del(inflightKey(shareId))])
  }

  private ttl(expiresAt: Date): number {
    return Math.max(60_000, expiresAt.getTime() - this.clock.now().getTime() + DAY)
  }
}
