import { type Read, ReadsInFlight } from './reads-in-flight.ts'

/**
 * A per-process cache of values read from a database, each kept under the version token its
 * reader read (from kv) before it read the database: key-info's key records, dns-manager's
 * principals and account views.
 *
 * Why a kept value is never older than a change the caller could know about: a reader reads the
 * token first and the database second, and keeps what it read under that token. A writer commits
 * first and replaces the token second (and only then answers its client). So a change committed
 * after the reader's database read replaces the token the reader kept under, and the next read,
 * asking with the new token, misses. A read still out when the token moves keeps its answer
 * under the old token, which no later reader asks with. A key with no token (null: never read,
 * expired, lost with a Redis restart) is read and not kept; tokens are random, not counters, so a
 * new one never equals an old one still kept.
 *
 * A Redis that restarted (or failed over) may have lost token replacements it had acknowledged,
 * and could then hand back a token a value is kept under: when the version source says so
 * (`onLost`), everything kept goes, no read out is joined again, and a read whose token was asked
 * for before that moment is not kept (`lostSince`).
 *
 * Misses of one key under one token at once share one read (ReadsInFlight).
 */
export interface VersionedCacheOptions<V> {
  /**
   * How long a kept value may serve at most, in ms. Bounds how long a change that did not replace
   * the token (SQL by hand, a replacement lost to a kv outage) stays unseen.
   */
  maxAgeMs: number
  /** How many values the process keeps at most (default 10,000); the least recently used go first. */
  maxEntries?: number
  /**
   * Or a budget by weight (bytes, say): what one value costs, and how much the process keeps; the
   * least recently used go first, and a value over a sixteenth of the budget is not kept.
   */
  weight?: { of: (value: V, key: string) => number; max: number }
  /** Milliseconds now (the app's clock, so tests can age entries). */
  now: () => number
  /** Calls its listener when the version source may have lost tokens (kv's reconnect). */
  onLost?: (listener: () => void) => void
}

/** A kept value and what it was read under. */
export interface Kept<V> {
  readonly value: V
  /** The token it was read under; null: kept without one to vouch for it (never served by get). */
  readonly token: string | null
  readonly cachedAt: number
  /** Until when (the options' clock) the value itself stays true; Infinity when it does not run out. */
  readonly validUntil: number
}

interface Entry<V> extends Kept<V> {
  /** When it last moved to the recently used end (at most once a second: see get). */
  movedAt: number
  weight: number
}

export interface ReadOptions<V> {
  /** When the token was asked for (performance.now()); a read asked before a loss is not kept. */
  askedAt: number
  /** Whether a value read is kept (default: all; key-info does not keep unknown keys). */
  keepIf?: (value: V) => boolean
  /** Until when a value read stays true (default: it does not run out). */
  validUntil?: (value: V) => number
}

export class VersionedCache<V> {
  private readonly entries = new Map<string, Entry<V>>()
  private readonly reads = new ReadsInFlight<V>()
  private readonly maxEntries: number
  private weight = 0
  private lostAt = -Infinity

  constructor(private readonly options: VersionedCacheOptions<V>) {
    this.maxEntries = options.maxEntries ?? 10_000
    options.onLost?.(() => {
      this.lostAt = performance.now()
      this.entries.clear()
      this.reads.clear()
      this.weight = 0
    })
  }

  /**
   * The value kept for `key`, if it was read under `token`, is younger than maxAgeMs and its own
   * time has not run out; else undefined. Never a value for a null token.
   */
  get(key: string, token: string | null, now = this.options.now()): V | undefined {
    if (token === null) return undefined
    const entry = this.entries.get(key)
    if (!entry || !this.usable(entry, token, now)) return undefined
    // Most recently used last, so the first key is the one to let go; moved at most once a
    // second, since each move adds a slot to the map's table (a new table now and then, which
    // under load survived into the old generation as garbage).
    if (now - entry.movedAt >= 1000) {
      entry.movedAt = now
      this.entries.delete(key)
      this.entries.set(key, entry)
    }
    return entry.value
  }

  /** What is kept for `key`, usable or not (a caller that reads its tokens ahead asks which). */
  peek(key: string): Kept<V> | undefined {
    return this.entries.get(key)
  }

  /** Whether `value` is the very value kept for `key`, and get would serve it under `token`. */
  holds(key: string, value: V, token: string | null, now = this.options.now()): boolean {
    const entry = this.entries.get(key)
    return entry !== undefined && entry.value === value && token !== null && this.usable(entry, token, now)
  }

  /** Whether the version source may have lost tokens since `askedAt` (performance.now()). */
  lostSince(askedAt: number): boolean {
    return askedAt <= this.lostAt
  }

  /** A miss's read of `key` under `token`: the one out under the same token, or `start()`'s. */
  load(key: string, token: string | null, start: () => Promise<V>): Read<V> {
    return this.reads.read(key, token, this.options.now(), start)
  }

  /** Keeps `value` for `key` under `token` (null: held, never served), replacing what was kept. */
  keep(key: string, token: string | null, value: V, cachedAt: number, validUntil = Infinity): void {
    this.forget(key)
    const weight = this.options.weight ? this.options.weight.of(value, key) : 1
    const max = this.options.weight ? this.options.weight.max : this.maxEntries
    if (this.options.weight && weight > max / 16) return
    this.entries.set(key, { value, token, cachedAt, validUntil, movedAt: cachedAt, weight })
    this.weight += weight
    for (const [oldest, entry] of this.entries) {
      if (this.weight <= max) break
      this.drop(oldest, entry)
    }
  }

  /** Lets what is kept for `key` go. */
  forget(key: string): void {
    const entry = this.entries.get(key)
    if (entry) this.drop(key, entry)
  }

  /**
   * get, or on a miss the read (shared with the misses of `key` under `token` out at once), kept
   * under `token` unless there is none, `keepIf` refuses it, or tokens may have been lost since
   * `askedAt`. What was kept for `key` before goes either way. A caller that joined another's
   * read leaves the keeping to the one who began it.
   */
  async read(key: string, token: string | null, load: () => Promise<V>, options: ReadOptions<V>): Promise<V> {
    const now = this.options.now()
    const hit = this.get(key, token, now)
    if (hit !== undefined) return hit
    const { read, began, joined } = this.reads.read(key, token, now, load)
    const value = await read
    if (joined) return value
    this.forget(key)
    if (token !== null && (options.keepIf?.(value) ?? true) && !this.lostSince(options.askedAt))
      this.keep(key, token, value, began, options.validUntil?.(value) ?? Infinity)
    return value
  }

  private usable(entry: Entry<V>, token: string, now: number): boolean {
    return entry.token === token && now - entry.cachedAt < this.options.maxAgeMs && now < entry.validUntil
  }

  private drop(key: string, entry: Entry<V>): void {
    this.entries.delete(key)
    this.weight -= entry.weight
  }
}
