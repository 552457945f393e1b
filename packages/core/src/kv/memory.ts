import type { KeyValueStore, WindowHit } from './port.ts'
import { integer, parseCounter, positive } from './numbers.ts'

interface Entry {
  value: string
  expiresAt: number | null
}

/** Single-process implementation. Node runs one callback at a time, so each method is atomic. */
export class MemoryKeyValueStore implements KeyValueStore {
  readonly kind = 'memory' as const
  private readonly entries = new Map<string, Entry>()
  private sweeper: NodeJS.Timeout | undefined

  constructor(private readonly now: () => number = Date.now) {
    // Expired entries are dropped on read; a slow sweep keeps an idle map from growing.
    this.sweeper = setInterval(() => this.sweep(), 60_000)
    this.sweeper.unref()
  }

  private live(key: string): Entry | undefined {
    const entry = this.entries.get(key)
    if (entry && entry.expiresAt !== null && entry.expiresAt <= this.now()) {
      this.entries.delete(key)
      return undefined
    }
    return entry
  }

  private sweep(): void {
    for (const key of this.entries.keys()) this.live(key)
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null
  }

  async getMany(keys: readonly string[]): Promise<Array<string | null>> {
    return keys.map((key) => this.live(key)?.value ?? null)
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.entries.set(key, { value, expiresAt: ttlMs === undefined ? null : this.now() + positive(ttlMs) })
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    if (this.live(key)) return false
    await this.set(key, value, ttlMs)
    return true
  }

  async take(key: string): Promise<string | null> {
    const entry = this.live(key)
    this.entries.delete(key)
    return entry?.value ?? null
  }

  async del(key: string): Promise<boolean> {
    const had = this.live(key) !== undefined
    this.entries.delete(key)
    return had
  }

  async incrWithTtl(key: string, by: number, ttlMs: number): Promise<number> {
    const entry = this.live(key)
    const current = entry ? parseCounter(entry.value, key) : 0
    const next = current + integer(by)
    this.entries.set(key, {
      value: String(next),
      expiresAt: entry?.expiresAt ?? this.now() + positive(ttlMs),
    })
    return next
  }

  async decrIfPositive(key: string): Promise<number | null> {
    const entry = this.live(key)
    if (!entry) return null
    const current = parseCounter(entry.value, key)
    if (current <= 0) return null
    entry.value = String(current - 1)
    return current - 1
  }

  async hitWindow(
    key: string,
    by: number,
    windowMs: number,
    reads: readonly string[] = [],
  ): Promise<WindowHit> {
    integer(by)
    const ttl = positive(windowMs)
    const entry = this.live(key)
    const count = (entry ? parseCounter(entry.value, key) : 0) + by
    const expiresAt = entry?.expiresAt ?? this.now() + ttl
    this.entries.set(key, { value: String(count), expiresAt })
    return {
      count,
      ttlMs: expiresAt - this.now(),
      values: reads.map((read) => this.live(read)?.value ?? null),
    }
  }

  async ttlMs(key: string): Promise<number | null> {
    const entry = this.live(key)
    return entry?.expiresAt == null ? null : entry.expiresAt - this.now()
  }

  async ping(): Promise<void> {}

  onReconnect(_listener: () => void): () => void {
    return () => {}
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper)
    this.sweeper = undefined
  }
}
