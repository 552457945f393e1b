import { ApiError } from '@quartet/core/errors'
import { type KeyValueStore, MemoryKeyValueStore } from '@quartet/core/kv'

/** One hit on a window counter, and where it was counted (so it can be taken back there). */
export interface CounterHit {
  /** The counter after this hit. */
  count: number
  /** Milliseconds until the window ends. */
  ttlMs: number
  /** false when kv failed and this process counted alone. */
  shared: boolean
  /**
   * When kv failed by not answering in time (a frozen Redis): the hit was sent and may still be
   * counted there once Redis wakes up. Taking such a hit back also takes it back in kv, later.
   */
  maybeInKv?: boolean
}

/**
 * A kv failure after the command went out (its outcome unknown), not a refusal to send it. Only
 * the words of a deadline that expired count: a refusal during a pause ("kv not connected
 * (paused: Redis did not answer moments ago)") was never sent.
 */
function mayHaveRun(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause)
    if (/^(kv did not answer|Command timed out)/.test(e.message)) return true
  return false
}

/** Keys with owed kv take-backs kept at most (beyond them, counts err on the strict side). */
const MAX_OWED = 10_000
const OWED_RETRY_MS = 1000

/**
 * Fixed-window counters and short claims for the limits of pickup-share (guessing, logins).
 * Counted in kv so every replica sees the same numbers; while kv fails or does not answer, this
 * process counts in its own memory instead: still limited (per process, so N replicas allow up
 * to N times a budget), never unlimited and never waiting on kv. The same idea as core's
 * createRateLimiter, with the two things it does not offer: taking a hit back (a right code or
 * password does not spend a failure budget) and a claim that only one caller gets.
 */
export class WindowCounters {
  private readonly local = new MemoryKeyValueStore()
  /**
   * Take-backs, per key, of hits kv may have counted while it did not answer; paid once it
   * answers, and already left out of the counts hit() reports meanwhile.
   */
  private readonly owed = new Map<string, { count: number; windowMs: number }>()
  private paying = false
  private owedTimer: NodeJS.Timeout | undefined

  constructor(
    private readonly kv: KeyValueStore,
    /** Told once per failing call, e.g. to log or count the fallback. */
    private readonly onFallback: (err: unknown) => void = () => {},
  ) {}

  /** Adds `by` to the counter `key` (a window of `windowMs` starts with its first hit). */
  async hit(key: string, windowMs: number, by = 1): Promise<CounterHit> {
    try {
      const hit = await this.kv.hitWindow(key, by, windowMs)
      const owed = this.owed.get(key)?.count ?? 0
      if (this.owed.size) void this.payOwed()
      return { count: hit.count - owed, ttlMs: hit.ttlMs, shared: true }
    } catch (err) {
      this.onFallback(err)
      const hit = await this.local.hitWindow(key, by, windowMs)
      return { count: hit.count, ttlMs: hit.ttlMs, shared: false, maybeInKv: mayHaveRun(err) }
    }
  }

  /**
   * Takes a hit back where it was counted. A take-back kv refused without running it (down, or
   * paused after a slow answer) is owed and paid once kv answers: during a Postgres outage every
   * code check is taken back, and losing those would lock honest addresses out. One whose outcome
   * is unknown (kv did not answer in time) is dropped, erring on the strict side.
   */
  async undo(key: string, hit: CounterHit, windowMs: number): Promise<void> {
    if (hit.shared) {
      try {
        await this.kv.hitWindow(key, -1, windowMs)
      } catch (err) {
        this.onFallback(err)
        if (!mayHaveRun(err)) this.owe(key, windowMs)
      }
      return
    }
    await this.local.hitWindow(key, -1, windowMs)
    // A frozen Redis counts the hit when it wakes: without this, a right code tried during
    // the freeze would stay a failure in kv, and an honest address could end up refused.
    if (hit.maybeInKv) this.owe(key, windowMs)
  }

  private owe(key: string, windowMs: number): void {
    const owed = this.owed.get(key)
    if (owed) owed.count++
    else if (this.owed.size < MAX_OWED) this.owed.set(key, { count: 1, windowMs })
    this.payOwedSoon()
  }

  private payOwedSoon(): void {
    if (this.owedTimer || this.owed.size === 0) return
    this.owedTimer = setTimeout(() => {
      this.owedTimer = undefined
      void this.payOwed()
    }, OWED_RETRY_MS)
    this.owedTimer.unref()
  }

  /**
   * Pays the owed take-backs while kv answers, one command per key; what is left waits for the
   * next try. They go out after the hits a frozen Redis still held (same connection, in order).
   */
  private async payOwed(): Promise<void> {
    if (this.paying) return
    this.paying = true
    try {
      for (const [key, owed] of this.owed) {
        const count = owed.count
        try {
          await this.kv.hitWindow(key, -count, owed.windowMs)
        } catch {
          break
        }
        owed.count -= count
        if (owed.count <= 0) this.owed.delete(key)
      }
    } finally {
      this.paying = false
      this.payOwedSoon()
    }
  }

  /**
   * Claims `key` for `ttlMs` when nobody holds it: null when this caller got it, else the
   * milliseconds until the holder's claim ends.
   */
  async claim(key: string, ttlMs: number): Promise<number | null> {
    let store: KeyValueStore = this.kv
    try {
      if (await this.kv.setIfAbsent(key, '1', ttlMs)) return null
    } catch (err) {
      this.onFallback(err)
      store = this.local
      if (await this.local.setIfAbsent(key, '1', ttlMs)) return null
    }
    try {
      return (await store.ttlMs(key)) ?? ttlMs
    } catch {
      return ttlMs
    }
  }

  /** Ends a claim early. */
  async release(key: string): Promise<void> {
    await Promise.all([this.kv.del(key).catch((err: unknown) => this.onFallback(err)), this.local.del(key)])
  }

  close(): Promise<void> {
    clearTimeout(this.owedTimer)
    return this.local.close()
  }
}

/** The 429 of a spent budget: `Retry-After` (and `details.retry_after`) from the window's end. */
export function limitExceeded(message: string, ttlMs: number, details: Record<string, unknown>): ApiError {
  const retryAfter = Math.max(1, Math.ceil(ttlMs / 1000))
  return new ApiError(
    'rate_limit_exceeded',
    message,
    { ...details, retry_after: retryAfter },
    { headers: { 'Retry-After': String(retryAfter) } },
  )
}
