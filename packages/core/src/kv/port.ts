/**
 * The key-value port the services use for counters, gates, sessions and caches. Two
 * implementations honour one contract (test/kv.contract.test.ts runs against both): Redis for
 * production (atomic steps in Lua) and in-process memory for a single node with no Redis.
 * Keys are prefixed by the implementation; TTLs are milliseconds.
 */
export interface KeyValueStore {
  readonly kind: 'redis' | 'memory'
  get(key: string): Promise<string | null>
  /** Several values in one round trip (Redis MGET), in order; null for a missing key. */
  getMany(keys: readonly string[]): Promise<Array<string | null>>
  /** Set a value, with an optional time to live. */
  set(key: string, value: string, ttlMs?: number): Promise<void>
  /** Set only when absent (a lock, a first-writer-wins marker). True when this call set it. */
  setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean>
  /** Read and delete in one step: a single-use token can be taken once. */
  take(key: string): Promise<string | null>
  del(key: string): Promise<boolean>
  /** Add `by` to an integer counter; the TTL is set when the counter is created and kept after. */
  incrWithTtl(key: string, by: number, ttlMs: number): Promise<number>
  /**
   * Decrement a counter only when it is above zero. Returns the new value, or null when the
   * counter is missing or already zero (nothing changed). Atomic under concurrency.
   */
  decrIfPositive(key: string): Promise<number | null>
  /**
   * One hit on a fixed-window counter, with reads on the side, in one atomic step: adds `by` to
   * the counter `key` (created with `windowMs` to live, which later hits keep), and reads the
   * keys `reads`. A rate limiter's primitive, so it fails soon rather than waiting on Redis:
   * at once while the store is not connected, and when Redis does not answer within a bound
   * (the caller has a fallback). Redis sends the hits made while one command is on its way as
   * the next command (group commit).
   */
  hitWindow(key: string, by: number, windowMs: number, reads?: readonly string[]): Promise<WindowHit>
  /** Remaining time to live in ms; null when the key is missing or has no expiry. */
  ttlMs(key: string): Promise<number | null>
  /** Reachability probe for /readyz. */
  ping(): Promise<void>
  /**
   * Calls `listener` each time a lost connection is back (not for the first one): the store may
   * have lost writes meanwhile (a restarted Redis), so what a process derived from it is suspect.
   * Never called for memory, which cannot lose its contents and keep running. Returns a function
   * that removes the listener.
   */
  onReconnect(listener: () => void): () => void
  close(): Promise<void>
}

export interface WindowHit {
  /** The counter after this hit. */
  count: number
  /** Milliseconds until the window ends and the counter is gone. */
  ttlMs: number
  /**
   * The values of `reads`, in order (null for a missing key); null when they could not be read
   * (a key of another type), though the hit was counted.
   */
  values: Array<string | null> | null
}
