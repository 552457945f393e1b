import { type KeyValueStore, MemoryKeyValueStore, type WindowHit } from '@quartet/core/kv'
import { WindowCounters } from '../../src/domain/window-counters.ts'

/**
 * A kv like a frozen Redis: while frozen, hitWindow does not answer in time (the caller gets
 * "did not answer"), yet the hit is applied when it thaws, in the order sent.
 */
function freezableKv(inner: MemoryKeyValueStore) {
  let frozen = false
  let backlog: Array<() => Promise<unknown>> = []
  const kv = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'hitWindow') return Reflect.get(target, prop, receiver)
      return async (key: string, by: number, windowMs: number): Promise<WindowHit> => {
        if (!frozen) return target.hitWindow(key, by, windowMs)
        backlog.push(() => target.hitWindow(key, by, windowMs))
        throw new Error('kv did not answer within 500 ms')
      }
    },
  }) as KeyValueStore
  return {
    kv,
    freeze: () => void (frozen = true),
    thaw: async () => {
      frozen = false
      for (const run of backlog) await run()
      backlog = []
    },
  }
}

async function countOf(kv: KeyValueStore, key: string): Promise<number> {
  return Number((await kv.get(key)) ?? 0)
}

describe('WindowCounters', () => {
  it('when a hit is taken back while kv is frozen, then kv is paid back once it answers, so the hit it counted on waking does not stay', async () => {
    const inner = new MemoryKeyValueStore()
    const redis = freezableKv(inner)
    const counters = new WindowCounters(redis.kv)
    try {
      redis.freeze()
      // Three right codes tried during the freeze: each hit is taken back.
      for (let i = 0; i < 3; i++) {
        const hit = await counters.hit('guess:ip:203.0.113.7', 60_000)
        expect(hit).toMatchObject({ shared: false, maybeInKv: true })
        await counters.undo('guess:ip:203.0.113.7', hit, 60_000)
      }
      await redis.thaw()
      expect(await countOf(inner, 'guess:ip:203.0.113.7')).toBe(3)
      // The next check, as soon as kv answers, is not charged the hits kv counted on waking.
      const next = await counters.hit('guess:ip:203.0.113.7', 60_000)
      expect(next).toMatchObject({ shared: true, count: 1 })
      await counters.undo('guess:ip:203.0.113.7', next, 60_000)
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(await countOf(inner, 'guess:ip:203.0.113.7')).toBe(0)
    } finally {
      await counters.close()
    }
  })

  it('when kv refuses a hit outright (not connected), then nothing is owed to it', async () => {
    const inner = new MemoryKeyValueStore()
    const down = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'hitWindow')
          return async () => Promise.reject(new Error('kv not connected (reconnecting)'))
        return Reflect.get(target, prop, receiver)
      },
    }) as KeyValueStore
    const counters = new WindowCounters(down)
    try {
      const hit = await counters.hit('guess:ip:203.0.113.8', 60_000)
      expect(hit).toMatchObject({ shared: false, maybeInKv: false })
      await counters.undo('guess:ip:203.0.113.8', hit, 60_000)
      expect(await counters.hit('guess:ip:203.0.113.8', 60_000)).toMatchObject({ count: 1 })
    } finally {
      await counters.close()
    }
  })

  /** A memory kv that can be switched to refuse every hitWindow (a Redis that is down). */
  function switchableKv(inner: MemoryKeyValueStore) {
    let down = false
    const kv = new Proxy(inner, {
      get(target, prop, receiver) {
        const real = Reflect.get(target, prop, receiver) as unknown
        if (typeof real !== 'function') return real
        return (...args: unknown[]) =>
          down
            ? Promise.reject(new Error('kv not connected (reconnecting)'))
            : (real as (...a: unknown[]) => unknown).apply(target, args)
      },
    }) as KeyValueStore
    return { kv, setDown: (value: boolean) => void (down = value) }
  }

  it("when kv goes down in the middle of a window, then this process counts on from kv's count, not from zero", async () => {
    const redis = switchableKv(new MemoryKeyValueStore())
    const counters = new WindowCounters(redis.kv)
    try {
      for (let i = 1; i <= 4; i++)
        expect(await counters.hit('guess:ip:a', 60_000)).toMatchObject({ count: i, shared: true })
      redis.setDown(true)
      expect(await counters.hit('guess:ip:a', 60_000)).toMatchObject({ count: 5, shared: false })
      expect(await counters.hit('guess:ip:a', 60_000)).toMatchObject({ count: 6, shared: false })
    } finally {
      await counters.close()
    }
  })

  it('when hits were counted here while kv refused them, then kv is paid them once it answers, so every replica sees them', async () => {
    const inner = new MemoryKeyValueStore()
    const redis = switchableKv(inner)
    const counters = new WindowCounters(redis.kv)
    try {
      redis.setDown(true)
      for (let i = 1; i <= 3; i++)
        expect(await counters.hit('guess:ip:b', 60_000)).toMatchObject({ count: i })
      redis.setDown(false)
      expect(await counters.hit('guess:ip:b', 60_000)).toMatchObject({ count: 4, shared: true })
      await new Promise((resolve) => setTimeout(resolve, 50))
      expect(await countOf(inner, 'guess:ip:b')).toBe(4)
      // Another process (replica) sharing this kv sees all four.
      const replica = new WindowCounters(redis.kv)
      expect(await replica.hit('guess:ip:b', 60_000)).toMatchObject({ count: 5 })
      await replica.close()
    } finally {
      await counters.close()
    }
  })

  it('when a hit is taken back after its window ended, then the next window keeps its whole budget', async () => {
    let now = 1_000_000
    const inner = new MemoryKeyValueStore(() => now)
    const counters = new WindowCounters(inner)
    try {
      const hit = await counters.hit('guess:ip:c', 1000)
      expect(hit.count).toBe(1)
      now += 1500
      await counters.undo('guess:ip:c', hit, 1000)
      expect(await inner.get('guess:ip:c')).toBeNull()
      expect(await counters.hit('guess:ip:c', 1000)).toMatchObject({ count: 1 })
    } finally {
      await counters.close()
    }
  })

  it('when 50 hits race in the in-process counting, then each sees its own count, 1 to 50', async () => {
    const redis = switchableKv(new MemoryKeyValueStore())
    redis.setDown(true)
    const offline = new WindowCounters(redis.kv)
    try {
      const counts = (
        await Promise.all(Array.from({ length: 50 }, () => offline.hit('guess:ip:d', 60_000)))
      ).map((h) => h.count)
      expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
    } finally {
      await offline.close()
    }
  })

  it('when a hit is refused during a pause, then it is not taken for one kv may have counted', async () => {
    const inner = new MemoryKeyValueStore()
    const paused = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'hitWindow')
          return async () =>
            Promise.reject(new Error('kv not connected (paused: Redis did not answer moments ago)'))
        return Reflect.get(target, prop, receiver)
      },
    }) as KeyValueStore
    const counters = new WindowCounters(paused)
    try {
      expect(await counters.hit('guess:ip:203.0.113.10', 60_000)).toMatchObject({
        shared: false,
        maybeInKv: false,
      })
    } finally {
      await counters.close()
    }
  })
})
