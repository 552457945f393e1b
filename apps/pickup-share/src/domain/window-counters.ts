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

/** Keys with owed kv corrections kept at most (beyond them, counts err on the strict side). */
const MAX_OWED = 10_000
const OWED_RETRY_MS = 1000
/** Keys whose last kv count this process keeps for a fallback to go on from. */
const MAX_LOCAL_KEYS = 100_000

/**
 * This process' own fixed windows: the counts while kv fails, and otherwise the last count kv
 * reported for each key, so that counting here goes on from where kv was rather than from zero.
 * Synchronous, so each step is atomic in the process.
 */
class LocalWindows {
  private readonly counters = new Map<string, { count: number; expiresAt: number }>()
  private readonly sweeper: NodeJS.Timeout

  constructor(private readonly maxKeys: number) {
    this.sweeper = setInterval(() => this.sweep(), 60_000)
    this.sweeper.unref()
  }

  private live(key: string, now: number) {
    const entry = this.counters.get(key)
    if (entry && entry.expiresAt <= now) {
      this.counters.delete(key)
      return undefined
    }
    return entry
  }

  private sweep(): void {
    const now = Date.now()
    for (const [key, entry] of this.counters) if (entry.expiresAt <= now) this.counters.delete(key)
  }

  /** Adds `by` and answers the count: the check and the spend in one step. */
  hit(key: string, by: number, windowMs: number): { count: number; ttlMs: number } {
    const now = Date.now()
    let entry = this.live(key, now)
    if (!entry) {
      entry = { count: 0, expiresAt: now + windowMs }
      this.counters.set(key, entry)
    }
    entry.count += by
    return { count: entry.count, ttlMs: entry.expiresAt - now }
  }

  /** What kv said the count is: kept when higher than this process' own. */
  raise(key: string, count: number, ttlMs: number): void {
    const now = Date.now()
    const entry = this.live(key, now)
    if (entry) {
      entry.count = Math.max(entry.count, count)
      return
    }
    if (this.counters.size >= this.maxKeys) this.sweep()
    if (this.counters.size < this.maxKeys) this.counters.set(key, { count, expiresAt: now + ttlMs })
  }

  /** Takes one back, never below zero and never into a window that has ended. */
  undo(key: string): void {
    const entry = this.live(key, Date.now())
    if (entry && entry.count > 0) entry.count--
  }

  close(): void {
    clearInterval(this.sweeper)
  }
}

/**
 * Fixed-window counters and short claims for the limits of pickup-share (guessing, logins).
 * Counted in kv so every replica sees the same numbers; while kv fails or does not answer, this
 * process counts in its own memory instead: still limited (per process, so N replicas allow up
 * to N times a budget), never unlimited and never waiting on kv. The same idea as core's
 * createRateLimiter, with the two things it does not offer: taking a hit back (a right code or
 * password does not spend a failure budget) and a claim that only one caller gets.
 *
 * Exact under parallel requests (issue 23 item 5): a hit is the check and the spend in one
 * atomic step — INCR-then-compare in one Lua script in Redis, one synchronous step in this
 * process — so no two requests can both see the last free unit. A fallback in the middle of a
 * burst goes on from the last count kv reported, not from zero, so the switch gives no process
 * a second budget; hits kv never saw are paid into kv once it answers, so every replica then
 * sees them too. A take-back never creates a counter: after its window ended it takes nothing
 * from the next one.
 */
export class WindowCounters {
  /** Claims while kv fails. */
  private readonly claims = new MemoryKeyValueStore()
  private readonly local = new LocalWindows(MAX_LOCAL_KEYS)
  /**
   * Corrections owed to kv, per key: +1 for each hit counted here that kv never saw (it refused
   * the command), -1 for each hit taken back that kv may count when it wakes (a frozen Redis).
   * Paid once kv answers, and already part of the counts hit() reports meanwhile.
   */
  private readonly owed = new Map<string, { delta: number; windowMs: number }>()
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
      const count = hit.count + (this.owed.get(key)?.delta ?? 0)
      if (this.owed.size) void this.payOwed()
      this.local.raise(key, count, hit.ttlMs)
      return { count, ttlMs: hit.ttlMs, shared: true }
    } catch (err) {
      this.onFallback(err)
      const maybeInKv = mayHaveRun(err)
      const hit = this.local.hit(key, by, windowMs)
      // A hit kv never received is owed to it; one it may have counted is not (it would count twice).
      if (!maybeInKv) this.owe(key, by, windowMs)
      return { count: hit.count, ttlMs: hit.ttlMs, shared: false, maybeInKv }
    }
  }

  /** Takes a hit back where it was counted; best effort (a lost undo errs on the strict side). */
  async undo(key: string, hit: CounterHit, windowMs: number): Promise<void> {
    this.local.undo(key)
    if (!hit.shared) {
      // A frozen Redis counts the hit when it wakes: without this, a right code tried during
      // the freeze would stay a failure in kv, and an honest address could end up refused. A hit
      // kv never saw cancels what it owed.
      this.owe(key, -1, windowMs)
      return
    }
    try {
      await this.kv.decrIfPositive(key)
    } catch (err) {
      this.onFallback(err)
      if (!mayHaveRun(err)) this.owe(key, -1, windowMs)
    }
  }

  private owe(key: string, delta: number, windowMs: number): void {
    const owed = this.owed.get(key)
    if (owed) {
      owed.delta += delta
      if (owed.delta === 0) this.owed.delete(key)
    } else if (this.owed.size < MAX_OWED) this.owed.set(key, { delta, windowMs })
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
   * Pays what is owed while kv answers, key by key; what is left waits for the next try. They go
   * out after the hits a frozen Redis still held (same connection, in order). Hits go in with one
   * command per key; take-backs one at a time with decrIfPositive, which never creates a counter
   * (a window that ended meanwhile has nothing to take back).
   */
  private async payOwed(): Promise<void> {
    if (this.paying) return
    this.paying = true
    try {
      for (const [key, owed] of this.owed) {
        try {
          if (owed.delta > 0) {
            const delta = owed.delta
            await this.kv.hitWindow(key, delta, owed.windowMs)
            owed.delta -= delta
          } else {
            while (owed.delta < 0) {
              const left = await this.kv.decrIfPositive(key)
              owed.delta++
              if (left === null) owed.delta = 0
            }
          }
        } catch {
          break
        }
        if (owed.delta === 0) this.owed.delete(key)
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
      store = this.claims
      if (await this.claims.setIfAbsent(key, '1', ttlMs)) return null
    }
    try {
      return (await store.ttlMs(key)) ?? ttlMs
    } catch {
      return ttlMs
    }
  }

  /** Ends a claim early. */
  async release(key: string): Promise<void> {
    await Promise.all([this.kv.del(key).catch((err: unknown) => this.onFallback(err)), this.claims.del(key)])
  }

  close(): Promise<void> {
    clearTimeout(this.owedTimer)
    this.local.close()
    return this.claims.close()
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
