import { randomBytes } from 'node:crypto'
import { ERRORS, type Lock, type Locker, type RequestRelease } from '@tus/utils'
import type { RedisKeyValueStore } from '@quartet/core/kv'

/** Renews the lease if this holder still has it; answers 1 = renewed, 2 = renewed and a release was asked for. */
const RENEW = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
return 1`

/** Deletes the lock only if this holder has it (a lease that ran out may be someone else's now). */
const RELEASE = `
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1`

export interface RedisLockerOptions {
  /** How long a lock lives without renewal: a replica that dies frees its uploads after this. */
  leaseMs?: number
  /** How long a request waits for a lock before tus answers 500 `ERR_LOCK_TIMEOUT`. */
  acquireTimeoutMs?: number
  /** How often a holder renews its lease and looks for release requests. */
  pollMs?: number
}

/**
 * The tus `Locker` over Redis, so that an upload is written by one request at a time across every
 * replica (@tus/server ships only an in-process MemoryLocker). A lock is a key with a lease the
 * holder renews; a request that finds the lock taken sets a release request, which the holder sees
 * at its next renewal and answers by calling tus's `requestRelease` (the old PATCH ends and
 * unlocks) — the same hand-over MemoryLocker does within one process, so a client that lost its
 * connection and resumes on another replica does not wait for the dead request to time out.
 */
export class RedisLocker implements Locker {
  readonly leaseMs: number
  readonly acquireTimeoutMs: number
  readonly pollMs: number

  /** Its commands go through the store's client under the store's deadline (a frozen Redis fails them in time). */
  constructor(
    readonly store: RedisKeyValueStore,
    options: RedisLockerOptions = {},
  ) {
    this.leaseMs = options.leaseMs ?? 10_000
    this.acquireTimeoutMs = options.acquireTimeoutMs ?? 20_000
    this.pollMs = options.pollMs ?? 250
  }

  newLock(id: string): Lock {
    return new RedisLock(this, id)
  }
}

class RedisLock implements Lock {
  private readonly key: string
  private readonly releaseKey: string
  private readonly token = randomBytes(16).toString('hex')
  private timer: NodeJS.Timeout | null = null

  constructor(
    private readonly locker: RedisLocker,
    id: string,
  ) {
    this.key = `tus:lock:${id}`
    this.releaseKey = `tus:release:${id}`
  }

  async lock(stopSignal: AbortSignal, requestRelease: RequestRelease): Promise<void> {
    const { store, leaseMs, acquireTimeoutMs, pollMs } = this.locker
    const redis = store.redis
    const deadline = Date.now() + acquireTimeoutMs
    for (;;) {
      if (stopSignal.aborted) throw ERRORS.ERR_LOCK_TIMEOUT
      if ((await store.deadline(redis.set(this.key, this.token, 'PX', leaseMs, 'NX'))) === 'OK') break
      // Ask the holder (on any replica) to let go, then try again shortly.
      await store.deadline(redis.set(this.releaseKey, '1', 'PX', Math.max(leaseMs, pollMs * 4)))
      if (Date.now() >= deadline) throw ERRORS.ERR_LOCK_TIMEOUT
      await new Promise((resolve) => setTimeout(resolve, Math.min(pollMs, 100)))
    }
    // A release request left for an earlier holder is not meant for this one.
    await store.deadline(redis.del(this.releaseKey))
    let asked = false
    this.timer = setInterval(() => {
      store
        .deadline(redis.eval(RENEW, 2, this.key, this.releaseKey, this.token, String(leaseMs)))
        .then((answer: unknown) => {
          if (Number(answer) === 2 && !asked) {
            asked = true
            return requestRelease()
          }
          return undefined
        })
        .catch(() => {
          // Redis unreachable: the lease runs out on its own; the request's writes go on.
        })
    }, pollMs)
    this.timer.unref()
  }

  async unlock(): Promise<void> {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    const { store } = this.locker
    await store.deadline(store.redis.eval(RELEASE, 2, this.key, this.releaseKey, this.token))
  }
}
