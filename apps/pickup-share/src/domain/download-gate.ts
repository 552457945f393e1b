import type { Clock } from '@quartet/core/clock'
import type { KeyValueStore } from '@quartet/core/kv'
import type { DownloadCountPort, TransferPayment } from './ports.ts'

const counterKey = (shareId: string) => `dl:${shareId}`
const inflightKey = (shareId: string) => `inflight:${shareId}`
const DAY = 86_400_000

/**
 * A stream the gate knows of: a reserved download (with the downloads left after it), or a free
 * request of a transfer already paid for (`left` null); and whether kv knows it is streaming.
 */
export interface Reservation {
  left: number | null
  /** false when kv was unavailable: the stream is not counted in flight, so its end finalises nothing. */
  tracked: boolean
}

/**
 * Reserves one download of a counted share before any byte is sent. The kv counter
 * (`decrIfPositive`) is the fast gate every replica shares; Postgres is the durable record and
 * has the last word with its own conditional decrement, so a kv that lost or over-counted its
 * value can never let more downloads through than the share allows. A missing kv counter is
 * re-seeded from Postgres (never reset to the maximum).
 *
 * Without kv (down, frozen, failing) downloads go on with Postgres alone: still exact, since its
 * conditional decrement decides. What kv alone knows is how many streams of a share are running,
 * so a download reserved without kv does not finalise the share when it ends; the sweeper removes
 * exhausted shares an hour later instead.
 */
export class DownloadGate {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly shares: DownloadCountPort,
    private readonly clock: Clock,
    /** Told when a kv step failed (the caller logs it, not once per download). */
    private readonly onKvFailure: (err: unknown) => void = () => {},
  ) {}

  /** Seeds the fast counter of a new share; without kv it is seeded from Postgres later. */
  async seed(shareId: string, remaining: number, expiresAt: Date): Promise<void> {
    await this.kv
      .set(counterKey(shareId), String(remaining), this.ttl(expiresAt))
      .catch((err: unknown) => this.onKvFailure(err))
  }

  /**
   * The reservation, or null when no download is left. `pay` names the transfer opening the
   * download pays for: marked paid in the same transaction as the durable decrement.
   */
  async reserve(shareId: string, expiresAt: Date, pay?: TransferPayment): Promise<Reservation | null> {
    let tracked = true
    try {
      if (!(await this.passKvGate(shareId, expiresAt))) return null
    } catch (err) {
      this.onKvFailure(err)
      tracked = false
    }
    let after: number | null
    try {
      after = await this.shares.decrementRemaining(shareId, this.clock.now(), pay)
    } catch (err) {
      // Re-seed from the durable record next time.
      await this.kv.del(counterKey(shareId)).catch(() => {})
      throw err
    }
    if (after === null) return null
    if (tracked)
      tracked = await this.kv.incrWithTtl(inflightKey(shareId), 1, this.ttl(expiresAt)).then(
        () => true,
        () => false,
      )
    return { left: after, tracked }
  }

  /**
   * The kv gate: false when kv says nothing is left. A counter kv lost is re-seeded from
   * Postgres; one at zero while Postgres still has downloads (a refund made while kv was away)
   * is dropped and Postgres alone decides this time.
   */
  private async passKvGate(shareId: string, expiresAt: Date): Promise<boolean> {
    const key = counterKey(shareId)
    if ((await this.kv.decrIfPositive(key)) !== null) return true
    const durable = await this.shares.remainingOf(shareId, this.clock.now())
    if (durable === null || durable <= 0) return false
    if (await this.kv.setIfAbsent(key, String(durable), this.ttl(expiresAt)))
      return (await this.kv.decrIfPositive(key)) !== null
    await this.kv.del(key)
    return true
  }

  /** A stream that spends nothing (a resumed transfer): counted in flight, so it keeps its share. */
  async enter(shareId: string, expiresAt: Date): Promise<Reservation> {
    const tracked = await this.kv.incrWithTtl(inflightKey(shareId), 1, this.ttl(expiresAt)).then(
      () => true,
      (err: unknown) => {
        this.onKvFailure(err)
        return false
      },
    )
    return { left: null, tracked }
  }

  /** Gives a reservation back (the store failed before the first byte). */
  async refund(shareId: string, reservation: Reservation): Promise<void> {
    await this.shares.refund(shareId)
    // Dropping the kv counter makes the next reservation re-seed from Postgres.
    await this.kv.del(counterKey(shareId)).catch(() => {})
    if (reservation.tracked) await this.kv.incrWithTtl(inflightKey(shareId), -1, DAY).catch(() => {})
  }

  /** A stream ended; true when it was the last stream of an exhausted share. */
  async finish(shareId: string, reservation: Reservation): Promise<boolean> {
    if (!reservation.tracked) return false
    let inflight: number
    try {
      inflight = await this.kv.incrWithTtl(inflightKey(shareId), -1, DAY)
    } catch {
      return false // the sweeper finalises it
    }
    if (inflight > 0) return false
    const share = await this.shares.findById(shareId)
    return share !== null && share.exhaustedAt !== null
  }

  async forget(shareId: string): Promise<void> {
    await Promise.all([this.kv.del(counterKey(shareId)), this.kv.del(inflightKey(shareId))]).catch(() => {})
  }

  private ttl(expiresAt: Date): number {
    return Math.max(60_000, expiresAt.getTime() - this.clock.now().getTime() + DAY)
  }
}
