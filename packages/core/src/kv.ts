import { Redis } from 'ioredis'

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

// --- Redis --------------------------------------------------------------------------------------

const INCR_WITH_TTL = `
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return v`

/**
 * Hits on fixed windows, in order, each its own step: ARGV[1] holds "by windowMs reads" per hit,
 * space-separated (one argument for the whole command rather than three a hit: each argument is
 * a string and several more to write, per hit, on every request); KEYS holds each hit's counter
 * followed by its reads. Each hit answers
 * {count, ttl, 1, reads…}; {count, ttl, 0, error} when it was counted but a read failed (a key
 * of another type); {false, error} when it could not be counted. A failing hit fails alone
 * (pcall): the others in the command are answered as if it had not been there.
 *
 * Under load one command carries the hits of many requests, mostly on the same few counters
 * (a busy client's) with the same reads (its account's version tokens). Inside the script
 * nothing else runs, so a counter's TTL asked once holds for the command's later hits on it, and
 * a key read once holds until one of the command's own hits counts on it: each is asked of Redis
 * once a command, not once a hit (a command of eleven hits on one counter with three reads made
 * 66 calls, now 15). A new window's TTL is set after its first INCRBY, in the same atomic step,
 * where a SET NX before every INCRBY did it.
 */
const HIT_WINDOWS = `
local function failed(reply)
  if type(reply) == 'table' and reply.err then return reply.err end
  return nil
end
local out = {}
local ttls = {}
local reads = {}
local k = 1
local h = 0
for by, windowMs, readCount in string.gmatch(ARGV[1], '(%-?%d+) (%d+) (%d+)') do
  h = h + 1
  local n = tonumber(readCount)
  if windowMs == '0' then
    -- No counter, only reads (getMany): MGET's answer, as a hit counting 0.
    local values = redis.call('MGET', unpack(KEYS, k, k + n - 1))
    local hit = {0, 0, 1}
    for i = 1, n do hit[i + 3] = values[i] end
    out[h] = hit
    k = k + n
  else
    local counter = KEYS[k]
    local count = redis.pcall('INCRBY', counter, by)
    local err = failed(count)
    if err then
      out[h] = {false, err}
    else
      -- Counted on: a read of it from here on asks Redis again.
      reads[counter] = nil
      local ttl = ttls[counter]
      if ttl == nil then
        ttl = redis.pcall('PTTL', counter)
        if ttl < 0 then
          -- A new window (or a counter left without a TTL): this hit starts it.
          redis.pcall('PEXPIRE', counter, windowMs)
          ttl = tonumber(windowMs)
        end
        ttls[counter] = ttl
      end
      local hit = {count, ttl, 1}
      for i = 1, n do
        local key = KEYS[k + i]
        -- A missing key reads as false: only nil means not read yet.
        local value = reads[key]
        if value == nil then
          value = redis.pcall('GET', key)
          reads[key] = value
        end
        local readErr = failed(value)
        if readErr then
          hit = {count, ttl, 0, readErr}
          break
        end
        hit[i + 3] = value
      end
      out[h] = hit
    end
    k = k + 1 + n
  end
end
return out`

const NO_READS: readonly string[] = Object.freeze([])

type HitAnswer = [number | null, number | string, ...Array<string | number | null>]

interface PendingHit {
  /** The counter; null for reads alone (getMany). */
  key: string | null
  by: number
  windowMs: number
  reads: readonly string[]
  resolve(hit: WindowHit): void
  reject(err: unknown): void
}

export interface RedisKeyValueStoreOptions {
  /** A hitWindow command (hits and getMany reads) unanswered after this long fails them (default 500 ms). */
  hitTimeoutMs?: number
  /** Hits (and getMany reads) waiting for a command beyond this many fail at once (default 10 000). */
  maxPendingHits?: number
  /** Hits sent in one command at most; more wait for the next (default 256). */
  maxHitsPerCommand?: number
  /** After a command Redis did not answer in time, fail every command at once this long (default 1000 ms). */
  pauseMs?: number
}

/** How long one Redis command may take before it fails (config REDIS_COMMAND_TIMEOUT_MS). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 500

const DECR_IF_POSITIVE = `
local v = tonumber(redis.call('GET', KEYS[1]))
if v == nil or v <= 0 then return false end
return redis.call('DECR', KEYS[1])`

export class RedisKeyValueStore implements KeyValueStore {
  readonly kind = 'redis' as const
  readonly redis: Redis

  private readonly reconnectListeners = new Set<() => void>()

  constructor(redis: Redis, ownsClient = true, options: RedisKeyValueStoreOptions = {}) {
    this.redis = redis
    this.ownsClient = ownsClient
    this.hitTimeoutMs = options.hitTimeoutMs ?? 500
    this.maxPendingHits = options.maxPendingHits ?? 10_000
    this.maxHitsPerCommand = options.maxHitsPerCommand ?? 256
    this.pauseMs = options.pauseMs ?? 1000
    // Connection errors surface as failed commands (and onReconnect); without a listener ioredis
    // would print each one to the console.
    redis.on('error', () => {})
    // One 'ready' handler for all onReconnect listeners, however many apps share this client.
    let connected = redis.status === 'ready'
    redis.on('ready', () => {
      if (connected) for (const listener of this.reconnectListeners) listener()
      connected = true
    })
    redis.defineCommand('quartetIncrWithTtl', { numberOfKeys: 1, lua: INCR_WITH_TTL })
    redis.defineCommand('quartetDecrIfPositive', { numberOfKeys: 1, lua: DECR_IF_POSITIVE })
    // The number of keys is given per call.
    redis.defineCommand('quartetHitWindows', { lua: HIT_WINDOWS })
    const first = firstConnection(redis, Math.max(redis.options.commandTimeout ?? 0, 2000))
    this.untilFirstConnection = first.wait
    this.waitsForFirstConnection = first.waiting
  }

  /**
   * A client still making its first connection is not 'ready', so a freshly started replica's
   * first hitWindow calls would fail (and its limiter count in memory, apart from its peers):
   * they wait for that first connection, bounded.
   */
  private readonly untilFirstConnection: () => Promise<void>
  private readonly waitsForFirstConnection: () => boolean

  private readonly ownsClient: boolean

  /**
   * A client with deadlines: a command Redis does not answer within `commandTimeoutMs` fails
   * (a frozen server); while the connection is down, commands fail at once instead of queueing
   * (no offline queue), and a command under way when it drops fails rather than being sent
   * again (it may have run: its outcome is unknown, and a resend could count twice). Only a new
   * client's first connection is waited for (up to 2 s), so a replica that just started does not
   * fail its first requests while it connects.
   */
  static connect(
    url: string,
    keyPrefix: string,
    commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS,
  ): RedisKeyValueStore {
    return new RedisKeyValueStore(
      new Redis(url, {
        keyPrefix,
        commandTimeout: commandTimeoutMs,
        // Commands never wait for a connection (no offline queue), so connecting may take its time.
        connectTimeout: 5000,
        maxRetriesPerRequest: 0,
        enableOfflineQueue: false,
        autoResendUnfulfilledCommands: false,
        lazyConnect: false,
        // No auto-pipelining: it saves a write per command when several go out in one tick, but
        // keeps every batch's commands reachable from long-lived pipeline state, so under load a
        // large share of short-lived objects survived young-generation GCs (pauses of several ms,
        // measured on key-info's hot route). A hot path that needs several values asks for them
        // in one command instead (rate-limit.ts consumeAndRead).
        enableAutoPipelining: false,
      }),
    )
  }

  async get(key: string): Promise<string | null> {
    await this.ready()
    return this.watch(this.redis.get(key))
  }

  /**
   * Read in the hits' group commit (sendHits): one command carries the reads and hits of every
   * request made while the last one was out, not one MGET each (under load, each command's
   * write costs the sender more than the reads). Atomic, as MGET is: one script reads them all.
   */
  getMany(keys: readonly string[]): Promise<Array<string | null>> {
    if (keys.length === 0) return Promise.resolve([])
    return this.grouped(null, 0, 0, keys).then(valuesOf)
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    await this.ready()
    if (ttlMs !== undefined) await this.watch(this.redis.set(key, value, 'PX', positive(ttlMs)))
    else await this.watch(this.redis.set(key, value))
  }

  async setIfAbsent(key: string, value: string, ttlMs?: number): Promise<boolean> {
    await this.ready()
    const result =
      ttlMs !== undefined
        ? await this.watch(this.redis.set(key, value, 'PX', positive(ttlMs), 'NX'))
        : await this.watch(this.redis.set(key, value, 'NX'))
    return result === 'OK'
  }

  async take(key: string): Promise<string | null> {
    await this.ready()
    return this.watch(this.redis.getdel(key))
  }

  async del(key: string): Promise<boolean> {
    await this.ready()
    return (await this.watch(this.redis.del(key))) > 0
  }

  async incrWithTtl(key: string, by: number, ttlMs: number): Promise<number> {
    await this.ready()
    const redis = this.redis as Redis & {
      quartetIncrWithTtl(k: string, by: number, ttl: number): Promise<number>
    }
    return Number(await this.watch(redis.quartetIncrWithTtl(key, integer(by), positive(ttlMs))))
  }

  async decrIfPositive(key: string): Promise<number | null> {
    await this.ready()
    const redis = this.redis as Redis & { quartetDecrIfPositive(k: string): Promise<number | null> }
    const v = await this.watch(redis.quartetDecrIfPositive(key))
    return v === null ? null : Number(v)
  }

  hitWindow(
    key: string,
    by: number,
    windowMs: number,
    reads: readonly string[] = NO_READS,
  ): Promise<WindowHit> {
    try {
      return this.grouped(key, integer(by), positive(windowMs), reads)
    } catch (err) {
      return Promise.reject(err as Error)
    }
  }

  /**
   * Not an async function: under load this runs twice a request, and each async layer (this
   * one, ready(), its wait for the first connection) is a promise and a suspended frame more of
   * short-lived garbage. Only a client still making its first connection waits for it.
   */
  private grouped(
    key: string | null,
    by: number,
    windowMs: number,
    reads: readonly string[],
  ): Promise<WindowHit> {
    if (this.waitsForFirstConnection()) return this.ready().then(() => this.grouped(key, by, windowMs, reads))
    return new Promise<WindowHit>((resolve, reject) => {
      if (Date.now() < this.pausedUntil)
        throw new Error('kv not connected (paused: Redis did not answer moments ago)')
      this.mustBeConnected()
      if (this.pendingHits.length >= this.maxPendingHits)
        throw new Error(`kv busy: ${this.pendingHits.length} hits waiting for Redis`)
      this.pendingHits.push({
        key,
        by,
        windowMs,
        reads: reads.length === 0 ? NO_READS : reads.slice(),
        resolve,
        reject,
      })
      // Hits made in this same turn go together; while a command is out, the next one gathers.
      if (!this.hitsInFlight && this.pendingHits.length === 1) queueMicrotask(this.sendPendingHits)
    })
  }

  /**
   * Group commit for hitWindow: one command at a time carries every hit made since the last one
   * went out, so under load a request costs a share of a command instead of a whole one. Each
   * hit is still its own step, in order, answered with its own count (HIT_WINDOWS). A command
   * not answered in time fails its hits and the next command goes out; its late answer is
   * ignored. (Those hits may have been counted in Redis too: the caller's fallback then counts
   * them twice, the safe way for a limit.)
   */
  private pendingHits: PendingHit[] = []
  private hitsInFlight = false
  private readonly hitTimeoutMs: number
  private readonly maxPendingHits: number
  private readonly maxHitsPerCommand: number

  private readonly sendPendingHits = (): void => this.sendHits()

  private sendHits(): void {
    if (this.hitsInFlight || this.pendingHits.length === 0) return
    const batch = this.pendingHits.splice(0, this.maxHitsPerCommand)
    let settled = false
    const settle = (answers: HitAnswer[] | null, err?: unknown): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      this.hitsInFlight = false
      batch.forEach((hit, i) => {
        try {
          if (!answers) throw err
          hit.resolve(decodeHit(hit, answers[i]))
        } catch (hitErr) {
          hit.reject(hitErr)
        }
      })
      this.sendHits()
    }
    this.hitsInFlight = true
    const timer = setTimeout(() => {
      this.pause()
      settle(null, new Error(`kv did not answer within ${this.hitTimeoutMs} ms`))
    }, this.hitTimeoutMs)
    timer.unref()
    try {
      this.mustBeConnected()
      const keys: string[] = []
      const args: number[] = []
      for (const hit of batch) {
        if (hit.key !== null) keys.push(hit.key)
        for (const read of hit.reads) keys.push(read)
        args.push(hit.by, hit.windowMs, hit.reads.length)
      }
      // ioredis flattens its arguments one level: the keys, without spreading them, then ARGV[1].
      const redis = this.redis as Redis & {
        quartetHitWindows(numberOfKeys: number, keys: string[], hits: string): Promise<HitAnswer[]>
      }
      redis.quartetHitWindows(keys.length, keys, args.join(' ')).then(
        (answers) => settle(answers),
        (err: unknown) => settle(null, err),
      )
    } catch (err) {
      settle(null, err)
    }
  }

  /**
   * After Redis failed to answer in time (frozen, or a network cut that looks the same), every
   * command fails at once for `pauseMs` rather than each one waiting out its own deadline: a
   * request that makes several kv calls pays one deadline, not one per call, and fewer commands
   * pile up in a frozen server to run when it wakes. The first command after the pause (or a
   * readiness ping) tries again.
   */
  private pausedUntil = 0
  private readonly pauseMs: number

  private pause(): void {
    this.pausedUntil = Date.now() + this.pauseMs
  }

  private async ready(): Promise<void> {
    await this.untilFirstConnection()
    if (Date.now() < this.pausedUntil)
      throw new Error('kv not connected (paused: Redis did not answer moments ago)')
  }

  private async watch<T>(command: Promise<T>): Promise<T> {
    try {
      return await command
    } catch (err) {
      if (err instanceof Error && err.message === 'Command timed out') this.pause()
      throw err
    }
  }

  private mustBeConnected(): void {
    if (this.redis.status !== 'ready') throw new Error(`kv not connected (${this.redis.status})`)
  }

  async ttlMs(key: string): Promise<number | null> {
    await this.ready()
    const t = await this.watch(this.redis.pttl(key))
    return t < 0 ? null : t
  }

  async ping(): Promise<void> {
    await this.untilFirstConnection()
    // The probe goes out even while paused, and a good answer ends the pause.
    await this.watch(this.redis.ping())
    this.pausedUntil = 0
  }

  onReconnect(listener: () => void): () => void {
    this.reconnectListeners.add(listener)
    return () => this.reconnectListeners.delete(listener)
  }

  async close(): Promise<void> {
    if (this.ownsClient && this.redis.status !== 'end')
      await this.redis.quit().catch(() => this.redis.disconnect())
  }
}

// --- memory -------------------------------------------------------------------------------------

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

/** Resolves once the client is first ready, or after `timeoutMs`, whichever comes first. */
function firstConnection(
  redis: Redis,
  timeoutMs = 2000,
): { wait: () => Promise<void>; waiting: () => boolean } {
  let pending: Promise<void> | undefined =
    redis.status === 'ready'
      ? undefined
      : new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, timeoutMs)
          timer.unref()
          redis.once('ready', () => {
            clearTimeout(timer)
            resolve()
          })
        }).then(() => {
          pending = undefined
        })
  return {
    wait: async () => {
      if (pending) await pending
    },
    waiting: () => pending !== undefined,
  }
}

const valuesOf = (hit: WindowHit): Array<string | null> => hit.values!

/** One hit's answer from HIT_WINDOWS; throws when it could not be counted. */
function decodeHit(hit: PendingHit, answer: HitAnswer | undefined): WindowHit {
  if (!answer) throw new Error('kv answered fewer hits than it was sent')
  const count = answer[0]
  if (count === null) throw new Error(`kv could not count the hit: ${String(answer[1])}`)
  return {
    count,
    ttlMs: Number(answer[1]),
    // A missing key comes back as a nil bulk reply (Lua false): null. The values follow [count, ttl, done].
    values:
      answer[2] === 1 ? hit.reads.map((_, j) => (answer[3 + j] as string | null | undefined) ?? null) : null,
  }
}

function parseCounter(value: string, key: string): number {
  const n = Number(value)
  if (!Number.isInteger(n)) throw new Error(`kv key ${key} does not hold an integer`)
  return n
}

function integer(n: number): number {
  if (!Number.isSafeInteger(n)) throw new Error(`expected an integer, got ${n}`)
  return n
}

function positive(ms: number): number {
  const n = Math.ceil(ms)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`TTL must be a positive number of ms, got ${ms}`)
  return n
}

/**
 * Redis when a URL is configured, else memory (single node only; the caller logs that). The
 * warning is the caller's so it lands in the app's own log with its name.
 */
export function createKeyValueStore(options: {
  redisUrl?: string | undefined
  keyPrefix: string
  /** Redis: how long one command may take (and a new client's first connection). */
  commandTimeoutMs?: number
}): KeyValueStore {
  return options.redisUrl
    ? RedisKeyValueStore.connect(options.redisUrl, options.keyPrefix, options.commandTimeoutMs)
    : new MemoryKeyValueStore()
}
