import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import { ApiError } from '@quartet/core/errors'
import type { TSettings } from './settings.ts'
import { type CounterHit, limitExceeded, type WindowCounters } from './window-counters.ts'

/** What the guard reports, for metrics and alerts (see http/metrics.ts). */
export interface GuessObserver {
  /** A code check found nothing (a wrong or dead code, or a path not in the share). */
  failure?(): void
  /** A code check refused before looking: the address's budget is spent, or no throttle slot. */
  refused?(reason: 'address' | 'throttle'): void
  /** A code check let through by the global throttle (the global budget is spent). */
  throttled?(): void
  /** The global budget is spent until `untilMs` (epoch ms): checks go through the throttle. */
  throttleActive?(untilMs: number): void
}

/** A code check that was let through; its failures are given back when the code was right. */
export interface GuessTicket {
  addressKey: string
  addressHit: CounterHit
  globalHit: CounterHit
  windowMs: number
}

const GLOBAL_KEY = 'guess:all'
const THROTTLE_KEY = 'guess:throttle'
const THROTTLE_WINDOW_MS = 60_000
/** How long a check waits for checks of its address in flight before it is answered. */
export const IN_FLIGHT_WAIT_MS = 1500
/** A refused check looks again this soon for checks of its address ending on another replica, */
const REMOTE_POLL_MS = 50
/** and keeps looking (backing off) this long before it is answered 429. */
const REMOTE_WAIT_MS = 800

/**
 * For a check refused while none of its own process's checks are in flight: checks in flight on
 * another replica may still give their failures back. Each call waits the next backed-off pause
 * (from REMOTE_POLL_MS) and resolves true, until `limitMs` (at most REMOTE_WAIT_MS) has passed
 * since this was made: then false, and the check is refused.
 */
export function lookAgainForOtherReplicas(limitMs: number): () => Promise<boolean> {
  const until = performance.now() + Math.min(limitMs, REMOTE_WAIT_MS)
  let pauseMs = REMOTE_POLL_MS
  return async () => {
    const leftMs = until - performance.now()
    if (leftMs <= 0) return false
    await new Promise((resolve) => setTimeout(resolve, Math.min(pauseMs, leftMs)))
    pauseMs *= 2
    return true
  }
}

/**
 * Against guessing pickup codes (README "Guessing"). Every check of a typed code spends one
 * failure of the client's address (IPv6 by its /64) and one of everyone's together *before* the
 * code is looked up, so parallel requests cannot overshoot a budget; a right code gives both
 * back, so only wrong codes spend them.
 *
 * - Past its own budget an address gets 429 for every code, right or wrong, until its window
 *   ends (else a right answer would still tell it which guess hit).
 * - Past the global budget nobody is refused outright: code checks go through a global throttle
 *   of `guessThrottlePerMinute`, the alert is raised, and a check without a slot gets 429 with
 *   the seconds until the next one. A right code needs a slot too: the server cannot tell a
 *   right guess from a right code before it looks, and looking without bound is what an
 *   attacker with many addresses wants. The pickup link's token never comes here at all.
 */
export class GuessGuard {
  private readonly observers = new Set<GuessObserver>()
  /** Checks admitted and not yet ended, per address key (this process). */
  private readonly inFlight = new Map<string, number>()
  private readonly waiters = new Map<string, Set<() => void>>()
  private throttleLoggedUntil = 0

  constructor(
    private readonly counters: WindowCounters,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** IN_FLIGHT_WAIT_MS; tests of exact counts on a loaded machine wait longer. */
    private readonly inFlightWaitMs = IN_FLIGHT_WAIT_MS,
  ) {}

  observe(observer: GuessObserver): () => void {
    this.observers.add(observer)
    return () => this.observers.delete(observer)
  }

  /**
   * Before a code is looked up: spends the failures in advance, or refuses with 429. A check
   * that finds its address's budget full while checks of that address are still in flight waits
   * (up to `inFlightWaitMs`) for them to end instead: right codes give their failures back, so
   * parallel right codes of one address are checked in turn, not refused. This process's checks
   * wake it as they end; checks in flight on another replica are not seen here, so a refused
   * check looks again, backing off from REMOTE_POLL_MS, for up to REMOTE_WAIT_MS before its 429
   * (which also slows a guesser past its budget down). Checks of this process still in flight
   * after the wait are slow lookups (a slow database): 503, not 429.
   */
  async admit(address: string, s: TSettings): Promise<GuessTicket> {
    const addressKey = `guess:ip:${address}`
    // Real time, not the injectable clock: this is a wait, not a window.
    const giveUpAt = performance.now() + this.inFlightWaitMs
    const lookAgain = lookAgainForOtherReplicas(this.inFlightWaitMs)
    for (;;) {
      const admitted = await this.tryAdmit(addressKey, s)
      if ('ticket' in admitted) {
        this.inFlight.set(addressKey, (this.inFlight.get(addressKey) ?? 0) + 1)
        return admitted.ticket
      }
      const waitMs = giveUpAt - performance.now()
      if (this.inFlight.has(addressKey) && waitMs > 0) {
        await this.settled(addressKey, waitMs)
        continue
      }
      if (this.inFlight.has(addressKey))
        throw new ApiError(
          'service_unavailable',
          'pickup codes are slow to check right now; try again shortly',
          undefined,
          { headers: { 'Retry-After': '2' } },
        )
      // Another replica's right codes may be giving failures back: look again for a while.
      if (await lookAgain()) continue
      this.emit((o) => o.refused?.('address'))
      throw limitExceeded('too many failed pickup attempts from this address', admitted.refused.ttlMs, {
        reason: 'address',
        limit: s.takeFailuresPerIp,
      })
    }
  }

  /** Resolves when a check of `addressKey` in flight ends, or after `ms`. */
  private settled(addressKey: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const waiters = this.waiters.get(addressKey) ?? new Set()
      this.waiters.set(addressKey, waiters)
      const done = () => {
        clearTimeout(timer)
        waiters.delete(done)
        if (waiters.size === 0 && this.waiters.get(addressKey) === waiters) this.waiters.delete(addressKey)
        resolve()
      }
      const timer = setTimeout(done, ms)
      waiters.add(done)
    })
  }

  private ended(ticket: GuessTicket): void {
    const left = (this.inFlight.get(ticket.addressKey) ?? 1) - 1
    if (left > 0) this.inFlight.set(ticket.addressKey, left)
    else this.inFlight.delete(ticket.addressKey)
    for (const wake of [...(this.waiters.get(ticket.addressKey) ?? [])]) wake()
  }

  private async tryAdmit(
    addressKey: string,
    s: TSettings,
  ): Promise<{ ticket: GuessTicket } | { refused: CounterHit }> {
    const windowMs = s.takeFailureWindowSeconds * 1000
    const [addressHit, globalHit] = await Promise.all([
      this.counters.hit(addressKey, windowMs),
      this.counters.hit(GLOBAL_KEY, windowMs),
    ])
    if (addressHit.count > s.takeFailuresPerIp) {
      // Refused before looking: this request is no failure, of the address or of everyone. The
      // address stays refused while its wrong checks (and checks in flight) fill its budget; a
      // refusal that counted would lock out an address whose parallel right codes were merely
      // slow to look up (a slow or stopped database) for the rest of the window.
      await Promise.all([
        this.counters.undo(addressKey, addressHit, windowMs),
        this.counters.undo(GLOBAL_KEY, globalHit, windowMs),
      ])
      return { refused: addressHit }
    }
    if (globalHit.count > s.takeFailuresGlobal) {
      const until = this.clock.now().getTime() + globalHit.ttlMs
      this.emit((o) => o.throttleActive?.(until))
      if (until > this.throttleLoggedUntil) {
        this.throttleLoggedUntil = until
        this.logger.warn(
          { failures: globalHit.count, budget: s.takeFailuresGlobal, until: new Date(until).toISOString() },
          'pickup code guessing: the global failure budget is spent, code checks are throttled',
        )
      }
      const slot = await this.counters.hit(THROTTLE_KEY, THROTTLE_WINDOW_MS)
      if (slot.count > s.guessThrottlePerMinute) {
        // Not looked at: the address keeps its budget for when a slot is free.
        await this.counters.undo(addressKey, addressHit, windowMs)
        this.emit((o) => o.refused?.('throttle'))
        throw limitExceeded(
          'many wrong pickup codes are being tried right now, so codes are checked slowly; try again shortly (the pickup link always works)',
          slot.ttlMs,
          { reason: 'throttle', limit: s.guessThrottlePerMinute },
        )
      }
      this.emit((o) => o.throttled?.())
    }
    return { ticket: { addressKey, addressHit, globalHit, windowMs } }
  }

  /** The code was right (or could not be looked up): its failures are given back. */
  async succeeded(ticket: GuessTicket): Promise<void> {
    try {
      await Promise.all([
        this.counters.undo(ticket.addressKey, ticket.addressHit, ticket.windowMs),
        this.counters.undo(GLOBAL_KEY, ticket.globalHit, ticket.windowMs),
      ])
    } finally {
      this.ended(ticket)
    }
  }

  /** The code was wrong: the failures stay spent. */
  failed(ticket: GuessTicket): void {
    this.ended(ticket)
    this.emit((o) => o.failure?.())
  }

  private emit(call: (o: GuessObserver) => void): void {
    for (const o of this.observers) {
      try {
        call(o)
      } catch (err) {
        this.logger.warn({ err }, 'guess observer failed')
      }
    }
  }
}

const YEAR_SECONDS = 365 * 86_400

/**
 * The most successful guesses a year an attacker with any number of addresses can expect against
 * `liveShares` live shares: every check the global budget and throttle allow, each hitting a live
 * code with probability liveShares / 10^codeLength (README "Guessing pickup codes").
 */
export function expectedGuessHitsPerYear(
  s: Pick<
    TSettings,
    'takeFailuresGlobal' | 'guessThrottlePerMinute' | 'takeFailureWindowSeconds' | 'codeLength'
  >,
  liveShares: number,
): number {
  const checksPerWindow = s.takeFailuresGlobal + (s.guessThrottlePerMinute * s.takeFailureWindowSeconds) / 60
  const checksPerYear = checksPerWindow * (YEAR_SECONDS / s.takeFailureWindowSeconds)
  return (checksPerYear * liveShares) / 10 ** s.codeLength
}
