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

  it('when kv refuses to take a hit back (paused after a slow answer), then the take-back is owed and paid once kv answers', async () => {
    const inner = new MemoryKeyValueStore()
    let refusing = false
    const paused = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop !== 'hitWindow') return Reflect.get(target, prop, receiver)
        return async (key: string, by: number, windowMs: number) => {
          if (refusing) throw new Error('kv not connected (paused: Redis did not answer moments ago)')
          return target.hitWindow(key, by, windowMs)
        }
      },
    }) as KeyValueStore
    const counters = new WindowCounters(paused)
    try {
      // Twelve right codes checked during a database outage, each taken back while kv pauses.
      for (let i = 0; i < 12; i++) {
        const hit = await counters.hit('guess:ip:203.0.113.9', 60_000)
        expect(hit).toMatchObject({ shared: true, count: 1 })
        refusing = true
        await counters.undo('guess:ip:203.0.113.9', hit, 60_000)
        refusing = false
      }
      // Each count reported left the owed take-backs out (count 1 every time), and kv is paid back.
      await new Promise((resolve) => setTimeout(resolve, 1200))
      expect(await countOf(inner, 'guess:ip:203.0.113.9')).toBe(0)
      expect(await counters.hit('guess:ip:203.0.113.9', 60_000)).toMatchObject({ shared: true, count: 1 })
    } finally {
      await counters.close()
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
