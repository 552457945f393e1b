import { type KeyValueStore, lateDeadline, type WindowHit } from '@quartet/core/kv'

/** A kv call that failed, did not answer in time, or was not tried because kv is down. */
export class KvUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'KvUnavailableError'
  }
}

export interface KvDeadlineOptions {
  /** A call unanswered after this long rejects (default 1000 ms). */
  timeoutMs?: number
  /** After a failure, calls reject at once for this long before kv is tried again (default 2000 ms). */
  pauseMs?: number
}

/** Errors that say kv is down, not that one call went wrong (ioredis' words for it). */
const DOWN =
  /not connected|connection is closed|Command timed out|MaxRetriesPerRequest|max retries per request|ECONNREFUSED|ECONNRESET|ETIMEDOUT|Stream isn't writeable|offline queue/i

/**
 * The kv store with a deadline on every call, for the paths that can do without kv (take,
 * download, limits). A frozen Redis (or one ioredis keeps queueing for) makes a call reject after
 * `timeoutMs` instead of holding the request for the whole freeze; after a call that timed out or
 * found kv down, calls reject at once for `pauseMs`, so a request that needs several kv calls pays
 * the timeout once, not once per call, and requests arriving meanwhile pay nothing. (A call that
 * failed on its own, such as a rate-limit hit core gave up on after 500 ms under load, does not
 * pause the others.) Every failure is a KvUnavailableError.
 *
 * Core's Redis store already fails a command after REDIS_COMMAND_TIMEOUT_MS (500 ms) and at once
 * while disconnected; the deadline here is the backstop for any kv (and for one that hangs in
 * tests), and the pause is what core does not offer: without it, a request that makes five kv
 * calls to a frozen Redis waits five command timeouts. What core could offer instead: the pause
 * on its KeyValueStore, with a `kv unavailable` error type services can tell from other failures.
 */
export function withKvDeadline(kv: KeyValueStore, options: KvDeadlineOptions = {}): KeyValueStore {
  const timeoutMs = options.timeoutMs ?? 1000
  const pauseMs = options.pauseMs ?? 2000
  let pausedUntil = 0
  const bounded = <T>(what: string, call: () => Promise<T>): Promise<T> => {
    if (Date.now() < pausedUntil)
      // Worded as core's Redis store words it, so core's 503 mapping knows it too.
      return Promise.reject(
        new KvUnavailableError(`kv not connected (${what} not tried: kv failed moments ago)`),
      )
    return new Promise<T>((resolve, reject) => {
      const fail = (err: KvUnavailableError, down: boolean) => {
        if (down) pausedUntil = Date.now() + pauseMs
        reject(err)
      }
      let settled = false
      // Judged once the loop has read what arrived: a busy process does not blame kv.
      const timer = lateDeadline(timeoutMs, () => {
        if (!settled) fail(new KvUnavailableError(`kv did not answer within ${timeoutMs} ms (${what})`), true)
      })
      let pending: Promise<T>
      try {
        pending = call()
      } catch (err) {
        pending = Promise.reject(err)
      }
      pending.then(
        (value) => {
          settled = true
          clearTimeout(timer)
          resolve(value)
        },
        (err: unknown) => {
          settled = true
          clearTimeout(timer)
          const message = `${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? String(err)}`
          fail(
            new KvUnavailableError(`kv ${what} failed: ${(err as Error)?.message ?? String(err)}`, {
              cause: err,
            }),
            DOWN.test(message),
          )
        },
      )
    })
  }
  return {
    kind: kv.kind,
    get: (key) => bounded('get', () => kv.get(key)),
    getMany: (keys) => bounded('getMany', () => kv.getMany(keys)),
    set: (key, value, ttlMs) => bounded('set', () => kv.set(key, value, ttlMs)),
    setIfAbsent: (key, value, ttlMs) => bounded('setIfAbsent', () => kv.setIfAbsent(key, value, ttlMs)),
    take: (key) => bounded('take', () => kv.take(key)),
    del: (key) => bounded('del', () => kv.del(key)),
    incrWithTtl: (key, by, ttlMs) => bounded('incrWithTtl', () => kv.incrWithTtl(key, by, ttlMs)),
    decrIfPositive: (key) => bounded('decrIfPositive', () => kv.decrIfPositive(key)),
    hitWindow: (key, by, windowMs, reads) =>
      bounded<WindowHit>('hitWindow', () => kv.hitWindow(key, by, windowMs, reads)),
    ttlMs: (key) => bounded('ttlMs', () => kv.ttlMs(key)),
    ping: () => bounded('ping', () => kv.ping()),
    onReconnect: (listener) => kv.onReconnect(listener),
    close: () => kv.close(),
  }
}
