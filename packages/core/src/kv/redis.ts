import { Redis } from 'ioredis'
import { lateDeadline } from '../clock.ts'
import type { KeyValueStore, WindowHit } from './port.ts'
import { integer, positive } from './numbers.ts'
import { DECR_IF_POSITIVE, HIT_WINDOWS, INCR_WITH_TTL } from './redis-scripts.ts'

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
  /**
   * A command unanswered after this long fails with 'Command timed out' (connect gives
   * REDIS_COMMAND_TIMEOUT_MS; default: none, the client's own). Judged after the event loop has
   * read what arrived (lateDeadline): a process that was itself late does not blame Redis.
   */
  commandTimeoutMs?: number
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
    this.commandTimeoutMs = options.commandTimeoutMs
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
    const first = firstConnection(
      redis,
      Math.max(options.commandTimeoutMs ?? redis.options.commandTimeout ?? 0, 2000),
    )
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
        // The command deadline is the store's own (watch, lateDeadline), not ioredis's
        // commandTimeout, whose timer fires before an answer that arrived while the process was
        // busy is read. Callers of the raw client run their commands through `deadline`.
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
      true,
      { commandTimeoutMs },
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
    const timer = lateDeadline(this.hitTimeoutMs, () => {
      if (settled) return
      this.pause()
      settle(null, new Error(`kv did not answer within ${this.hitTimeoutMs} ms`))
    })
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

  private readonly commandTimeoutMs: number | undefined

  /**
   * A command of the raw client (`redis`) under the store's deadline and pause, as the store's
   * own commands are: for a caller that needs a command the store has no method for
   * (pickup-share's tus lock). A client made by `connect` has no other deadline.
   */
  deadline<T>(command: Promise<T>): Promise<T> {
    return this.watch(command)
  }

  /** A command under the store's deadline (commandTimeoutMs); one that times out pauses the store. */
  private watch<T>(command: Promise<T>): Promise<T> {
    const timeoutMs = this.commandTimeoutMs
    return new Promise<T>((resolve, reject) => {
      let settled = false
      const timer =
        timeoutMs === undefined
          ? undefined
          : lateDeadline(timeoutMs, () => {
              if (settled) return
              settled = true
              this.pause()
              reject(new Error('Command timed out'))
            })
      command.then(
        (value) => {
          if (settled) return
          settled = true
          if (timer) clearTimeout(timer)
          resolve(value)
        },
        (err: unknown) => {
          if (settled) return
          settled = true
          if (timer) clearTimeout(timer)
          if (err instanceof Error && err.message === 'Command timed out') this.pause()
          reject(err)
        },
      )
    })
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
      // Under the deadline: a frozen Redis must not hold a shutdown.
      await this.watch(this.redis.quit()).catch(() => this.redis.disconnect())
  }
}

// --- memory -------------------------------------------------------------------------------------

/** Resolves once the client is first ready, or after `timeoutMs`, whichever comes first. */
function firstConnection(
  redis: Redis,
  timeoutMs = 2000,
): { wait: () => Promise<void>; waiting: () => boolean } {
  let pending: Promise<void> | undefined =
    redis.status === 'ready'
      ? undefined
      : new Promise<void>((resolve) => {
          let timer: NodeJS.Timeout | undefined
          const ready = () => {
            if (timer) clearTimeout(timer)
            resolve()
          }
          redis.once('ready', ready)
          // Judged after the loop has read its sockets (lateDeadline): a process busy through
          // the wait (a CLI's first query) would otherwise give up on a connection that came
          // meanwhile. One whose socket is up and whose ready check is under way ('connect')
          // gets as long again.
          timer = lateDeadline(timeoutMs, () => {
            if (redis.status !== 'connect') return ready()
            timer = lateDeadline(timeoutMs, ready)
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
