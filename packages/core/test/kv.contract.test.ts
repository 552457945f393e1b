import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { Redis } from 'ioredis'
import {
  type KeyValueStore,
  MemoryKeyValueStore,
  RedisKeyValueStore,
  type RedisKeyValueStoreOptions,
} from '../src/kv.ts'
import { deleteRedisKeys, describeWhen, startOwnRedis, type TestNeeds, uniqueName } from '../src/testing.ts'

/**
 * ONE contract, two implementations: whatever a service relies on must hold for Redis (production)
 * and memory (single node, no Redis) alike. The Redis half needs REDIS_URL (describeWhen).
 */

interface Backend {
  name: string
  needs: TestNeeds
  open(): { kv: KeyValueStore; prefix: string }
}

const redisUrl = process.env.REDIS_URL
const REDIS: TestNeeds = { env: ['REDIS_URL'] }

const backends: Backend[] = [
  { name: 'memory', needs: {}, open: () => ({ kv: new MemoryKeyValueStore(), prefix: '' }) },
  {
    name: 'redis',
    needs: REDIS,
    open: () => {
      const prefix = `${uniqueName('kvtest')}:`
      return { kv: RedisKeyValueStore.connect(redisUrl!, prefix), prefix }
    },
  },
]

function key(name: string): string {
  return `${name}:${randomBytes(4).toString('hex')}`
}

function keyValueStoreContract(backend: Backend): void {
  let kv: KeyValueStore
  let prefix: string

  beforeAll(() => {
    ;({ kv, prefix } = backend.open())
  })

  afterAll(async () => {
    if (kv instanceof RedisKeyValueStore) {
      await deleteRedisKeys(redisUrl!, prefix)
    }
    await kv.close()
  })

  it('reports its kind', () => {
    expect(kv.kind).toBe(backend.name)
  })

  it('when pinged, then it answers', async () => {
    await expect(kv.ping()).resolves.toBeUndefined()
  })

  describe('get / set', () => {
    it('when a key was never set, then get is null', async () => {
      await expect(kv.get(key('missing'))).resolves.toBeNull()
    })

    it('when a key is set, then get returns the value, and a second set overwrites it', async () => {
      const k = key('plain')

      await kv.set(k, 'one')
      const first = await kv.get(k)
      await kv.set(k, 'two')

      expect(first).toBe('one')
      await expect(kv.get(k)).resolves.toBe('two')
    })

    it('when several keys are read at once, then getMany answers each in order, null for a missing one', async () => {
      const [a, b, c] = [key('many-a'), key('many-b'), key('many-c')]
      await kv.set(a, 'a')
      await kv.set(c, 'c', 60_000)

      await expect(kv.getMany([a, b, c])).resolves.toEqual(['a', null, 'c'])
      await expect(kv.getMany([])).resolves.toEqual([])
    })

    it('when a key is set without TTL, then ttlMs is null', async () => {
      const k = key('forever')
      await kv.set(k, 'v')

      await expect(kv.ttlMs(k)).resolves.toBeNull()
    })

    it('when a key is missing, then ttlMs is null', async () => {
      await expect(kv.ttlMs(key('missing'))).resolves.toBeNull()
    })

    it('when a key is set with a TTL, then it is readable until the TTL passes and gone after', async () => {
      const k = key('ttl')

      await kv.set(k, 'short-lived', 150)
      const before = await kv.get(k)
      const ttl = await kv.ttlMs(k)
      await sleep(250)

      expect(before).toBe('short-lived')
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(150)
      await expect(kv.get(k)).resolves.toBeNull()
      await expect(kv.ttlMs(k)).resolves.toBeNull()
    })

    it('when a TTL is zero or negative, then set refuses it', async () => {
      await expect(kv.set(key('bad-ttl'), 'v', 0)).rejects.toThrow(/TTL must be a positive/)
      await expect(kv.set(key('bad-ttl'), 'v', -5)).rejects.toThrow(/TTL must be a positive/)
    })
  })

  describe('setIfAbsent', () => {
    it('when the key is absent, then the first call sets it and later calls do not overwrite', async () => {
      const k = key('lock')

      const first = await kv.setIfAbsent(k, 'owner-a')
      const second = await kv.setIfAbsent(k, 'owner-b')

      expect(first).toBe(true)
      expect(second).toBe(false)
      await expect(kv.get(k)).resolves.toBe('owner-a')
    })

    it('when the earlier value has expired, then the key can be set again', async () => {
      const k = key('lock-ttl')
      await kv.setIfAbsent(k, 'owner-a', 100)
      await sleep(200)

      await expect(kv.setIfAbsent(k, 'owner-b', 1000)).resolves.toBe(true)
      await expect(kv.get(k)).resolves.toBe('owner-b')
    })

    it('when 20 callers race for one key, then exactly one wins', async () => {
      const k = key('race')

      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => kv.setIfAbsent(k, `owner-${i}`, 5000)),
      )

      expect(results.filter(Boolean)).toHaveLength(1)
      await expect(kv.get(k)).resolves.toBe(`owner-${results.indexOf(true)}`)
    })
  })

  describe('take', () => {
    it('when a value is taken, then it is returned once and the key is gone', async () => {
      const k = key('token')
      await kv.set(k, 'single-use')

      const first = await kv.take(k)
      const second = await kv.take(k)

      expect(first).toBe('single-use')
      expect(second).toBeNull()
      await expect(kv.get(k)).resolves.toBeNull()
    })

    it('when 20 callers take the same key at once, then exactly one gets the value', async () => {
      const k = key('token-race')
      await kv.set(k, 'authorization-code')

      const results = await Promise.all(Array.from({ length: 20 }, () => kv.take(k)))

      expect(results.filter((v) => v !== null)).toEqual(['authorization-code'])
    })

    it('when the key has expired, then take returns null', async () => {
      const k = key('token-expired')
      await kv.set(k, 'v', 50)
      await sleep(120)

      await expect(kv.take(k)).resolves.toBeNull()
    })
  })

  describe('del', () => {
    it('when an existing key is deleted, then del is true and the key is gone', async () => {
      const k = key('del')
      await kv.set(k, 'v')

      await expect(kv.del(k)).resolves.toBe(true)
      await expect(kv.get(k)).resolves.toBeNull()
    })

    it('when a missing key is deleted, then del is false', async () => {
      await expect(kv.del(key('del-missing'))).resolves.toBe(false)
    })
  })

  describe('incrWithTtl', () => {
    it('when a counter is incremented, then it starts from zero and adds `by` each time', async () => {
      const k = key('counter')

      const values = [
        await kv.incrWithTtl(k, 1, 10_000),
        await kv.incrWithTtl(k, 5, 10_000),
        await kv.incrWithTtl(k, -2, 10_000),
      ]

      expect(values).toEqual([1, 6, 4])
      await expect(kv.get(k)).resolves.toBe('4')
    })

    it('when later increments pass a longer TTL, then the first TTL is kept', async () => {
      const k = key('window')

      // 5 s, not less: on a loaded CI machine a 300 ms window ended before the second increment,
      // which then rightly began a new one with its own TTL.
      await kv.incrWithTtl(k, 1, 5_000)
      await sleep(50)
      await kv.incrWithTtl(k, 1, 60_000)
      const ttl = await kv.ttlMs(k)

      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(5_000)
    })

    it('when the window expires, then the counter starts again', async () => {
      const k = key('window-reset')
      await kv.incrWithTtl(k, 3, 100)
      await sleep(200)

      await expect(kv.incrWithTtl(k, 1, 1000)).resolves.toBe(1)
    })

    it('when 50 increments race, then the counter ends at exactly 50 with distinct intermediate values', async () => {
      const k = key('counter-race')

      const values = await Promise.all(Array.from({ length: 50 }, () => kv.incrWithTtl(k, 1, 10_000)))

      expect([...values].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1))
      await expect(kv.get(k)).resolves.toBe('50')
    })
  })

  describe('hitWindow', () => {
    it('when a window is hit, then it counts from zero, keeps its first TTL, and reads the other keys in order', async () => {
      const [k, a, b] = [key('hits'), key('read-a'), key('read-b')]
      await kv.set(b, 'bee')

      const first = await kv.hitWindow(k, 2, 5000, [a, b])
      const second = await kv.hitWindow(k, 1, 60_000, [b, a])

      expect(first).toMatchObject({ count: 2, values: [null, 'bee'] })
      expect(first.ttlMs).toBeGreaterThan(4000)
      expect(first.ttlMs).toBeLessThanOrEqual(5000)
      expect(second).toMatchObject({ count: 3, values: ['bee', null] })
      expect(second.ttlMs).toBeLessThanOrEqual(first.ttlMs)
      await expect(kv.get(k)).resolves.toBe('3')
    })

    it('when no reads are asked for, then values is empty; when the window has passed, the count starts again', async () => {
      const k = key('hits-reset')
      await expect(kv.hitWindow(k, 3, 100)).resolves.toMatchObject({ count: 3, values: [] })
      await sleep(200)

      await expect(kv.hitWindow(k, 1, 1000)).resolves.toMatchObject({ count: 1 })
    })

    it('when 50 hits race, then each sees a distinct count and the counter ends at exactly 50', async () => {
      const k = key('hits-race')

      const hits = await Promise.all(Array.from({ length: 50 }, () => kv.hitWindow(k, 1, 10_000)))

      expect(hits.map((h) => h.count).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 50 }, (_, i) => i + 1),
      )
      await expect(kv.get(k)).resolves.toBe('50')
    })

    it('when hits of negative, zero and very large amounts go together, then each counts as given', async () => {
      const k = key('hits-signed')
      const big = 2 ** 50 + 3

      const hits = await Promise.all([
        kv.hitWindow(k, 5, 10_000),
        kv.hitWindow(k, -7, 10_000),
        kv.hitWindow(k, 0, 10_000),
        kv.hitWindow(key('hits-big'), big, 10_000),
      ])

      expect(hits.map((h) => h.count)).toEqual([5, -2, -2, big])
      await expect(kv.get(k)).resolves.toBe('-2')
    })

    it('when the amount is not an integer or the window not positive, then it refuses', async () => {
      await expect(kv.hitWindow(key('bad'), 1.5, 1000)).rejects.toThrow()
      await expect(kv.hitWindow(key('bad'), 1, 0)).rejects.toThrow()
    })
  })

  describe('decrIfPositive', () => {
    it('when the counter is missing, then it is null and the key stays missing', async () => {
      const k = key('stock-missing')

      await expect(kv.decrIfPositive(k)).resolves.toBeNull()
      await expect(kv.get(k)).resolves.toBeNull()
    })

    it('when the counter is zero, then it is null and stays zero', async () => {
      const k = key('stock-zero')
      await kv.set(k, '0')

      await expect(kv.decrIfPositive(k)).resolves.toBeNull()
      await expect(kv.get(k)).resolves.toBe('0')
    })

    it('when the counter is 2, then it counts 1, 0, then refuses', async () => {
      const k = key('stock-two')
      await kv.set(k, '2')

      const results = [await kv.decrIfPositive(k), await kv.decrIfPositive(k), await kv.decrIfPositive(k)]

      expect(results).toEqual([1, 0, null])
    })

    it('when the counter has a TTL, then decrementing keeps it', async () => {
      const k = key('stock-ttl')
      await kv.set(k, '5', 10_000)

      await kv.decrIfPositive(k)

      await expect(kv.ttlMs(k)).resolves.toBeGreaterThan(5_000)
    })

    it('when 50 callers decrement a counter of 10 at once, then exactly 10 succeed and it ends at 0', async () => {
      const k = key('downloads-left')
      await kv.set(k, '10')

      const results = await Promise.all(Array.from({ length: 50 }, () => kv.decrIfPositive(k)))
      const successes = results.filter((v): v is number => v !== null)

      expect(successes).toHaveLength(10)
      expect([...successes].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      expect(results.filter((v) => v === null)).toHaveLength(40)
      await expect(kv.get(k)).resolves.toBe('0')
    })
  })
}

for (const backend of backends)
  describeWhen(backend.needs, `KeyValueStore contract: ${backend.name}`, () => keyValueStoreContract(backend))

describeWhen(REDIS, 'RedisKeyValueStore key prefix', () => {
  it('when counters are changed through Lua scripts, then their keys carry the store prefix too', async () => {
    const prefix = `${uniqueName('kvprefix')}:`
    const kv = RedisKeyValueStore.connect(redisUrl!, prefix)
    const plain = new Redis(redisUrl!)
    try {
      await kv.incrWithTtl('hits', 3, 10_000)
      await kv.set('stock', '4')
      await kv.decrIfPositive('stock')
      const window = await kv.hitWindow('window', 1, 10_000, ['stock', 'hits'])

      await expect(plain.get(`${prefix}hits`)).resolves.toBe('3')
      await expect(plain.get(`${prefix}stock`)).resolves.toBe('3')
      await expect(plain.get(`${prefix}window`)).resolves.toBe('1')
      expect(window.values).toEqual(['3', '3'])
      await expect(plain.exists('hits', 'stock', 'window')).resolves.toBe(0)
    } finally {
      await plain.del(`${prefix}hits`, `${prefix}stock`, `${prefix}window`)
      await plain.quit()
      await kv.close()
    }
  })
})

describeWhen(REDIS, 'RedisKeyValueStore reconnect', () => {
  it('when the connection is cut and comes back, then onReconnect listeners hear of it, not of the first connect', async () => {
    const kv = RedisKeyValueStore.connect(redisUrl!, `${uniqueName('kvreconnect')}:`)
    const plain = new Redis(redisUrl!)
    let heard = 0
    let removedHeard = 0
    try {
      kv.onReconnect(() => heard++)
      kv.onReconnect(() => removedHeard++)()
      await kv.ping()
      expect(heard).toBe(0)

      const id = (await kv.redis.client('ID')) as number
      await plain.client('KILL', 'ID', String(id))
      for (let i = 0; i < 100 && heard === 0; i++) await sleep(20)

      expect(heard).toBe(1)
      expect(removedHeard).toBe(0)
      await kv.ping()
    } finally {
      await plain.quit()
      await kv.close()
    }
  })
})

describeWhen(REDIS, 'RedisKeyValueStore hitWindow group commit', () => {
  let kv: RedisKeyValueStore
  let prefix: string
  let commands: number
  /** While set, commands wait for it before they go to Redis (a slow or silent Redis). */
  let gate: Promise<void> | null
  let failNext: boolean

  function open(options: RedisKeyValueStoreOptions = {}): void {
    prefix = `${uniqueName('kvgroup')}:`
    kv = new RedisKeyValueStore(new Redis(redisUrl!, { keyPrefix: prefix }), true, options)
    commands = 0
    gate = null
    failNext = false
    const client = kv.redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>
    const send = client.quartetHitWindows!.bind(kv.redis)
    client.quartetHitWindows = async (...args) => {
      commands++
      if (gate) await gate
      if (failNext) {
        failNext = false
        throw new Error('LOADING Redis is loading the dataset in memory')
      }
      return send(...args)
    }
  }
  afterEach(async () => {
    await deleteRedisKeys(redisUrl!, prefix)
    await kv.close()
  })

  it('when 100 hits on 5 counters are made at once, then they go out in one command and each gets its own count and reads', async () => {
    open()
    await kv.ping()
    await kv.set('a', 'A')

    const hits = await Promise.all(
      Array.from({ length: 100 }, (_, i) => kv.hitWindow(`c${i % 5}`, 1, 10_000, i % 2 ? ['a', 'none'] : [])),
    )

    expect(commands).toBe(1)
    for (let c = 0; c < 5; c++) {
      const counts = hits.filter((_, i) => i % 5 === c).map((h) => h.count)
      expect(counts).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    }
    expect(hits.filter((_, i) => i % 2).every((h) => h.values?.[0] === 'A' && h.values[1] === null)).toBe(
      true,
    )
    expect(hits.filter((_, i) => i % 2 === 0).every((h) => h.values?.length === 0)).toBe(true)
  })

  it('when reads and hits are made at once, then they go out in one command, each read as MGET reads', async () => {
    open()
    await kv.ping()
    await kv.set('a', 'A')
    await (kv.redis as unknown as Redis).hset('h', 'f', 'v')

    const [reads, hit, more] = await Promise.all([
      kv.getMany(['a', 'none', 'h']),
      kv.hitWindow('c', 1, 10_000, ['a']),
      kv.getMany(['none', 'a']),
    ])

    expect(commands).toBe(1)
    // A key of another type reads as missing, as MGET answers it.
    expect(reads).toEqual(['A', null, null])
    expect(hit).toMatchObject({ count: 1, values: ['A'] })
    expect(more).toEqual([null, 'A'])
  })

  it('when a command reads a key that one of its own hits counts on, then each read sees the count at its step', async () => {
    open()
    await kv.ping()

    const hits = await Promise.all([
      kv.hitWindow('x', 1, 10_000, ['c']),
      kv.hitWindow('c', 5, 10_000, ['c']),
      kv.hitWindow('x', 1, 10_000, ['c']),
      kv.hitWindow('c', 2, 10_000),
      kv.hitWindow('x', 1, 10_000, ['c', 'x']),
    ])

    expect(commands).toBe(1)
    expect(hits.map((h) => [h.count, h.values])).toEqual([
      [1, [null]],
      [5, ['5']],
      [2, ['5']],
      [7, []],
      [3, ['7', '3']],
    ])
  })

  it('when a command hits a new window, an open one and a counter left without a TTL, then each gets its own window, shared by its later hits', async () => {
    open()
    await kv.ping()
    const redis = kv.redis as unknown as Redis
    await redis.set('open', '4', 'PX', 3000)
    await redis.set('kept', '7')

    const hits = await Promise.all([
      kv.hitWindow('new', 1, 5000),
      kv.hitWindow('open', 1, 60_000),
      kv.hitWindow('kept', 1, 8000),
      kv.hitWindow('new', 1, 60_000),
      kv.hitWindow('open', 1, 60_000),
      kv.hitWindow('kept', 1, 60_000),
    ])

    expect(commands).toBe(1)
    expect(hits.map((h) => h.count)).toEqual([1, 5, 8, 2, 6, 9])
    const [fresh, open_, kept] = [hits[0]!.ttlMs, hits[1]!.ttlMs, hits[2]!.ttlMs]
    expect(fresh).toBeGreaterThan(4000)
    expect(fresh).toBeLessThanOrEqual(5000)
    expect(open_).toBeGreaterThan(2000)
    expect(open_).toBeLessThanOrEqual(3000)
    expect(kept).toBeGreaterThan(7000)
    expect(kept).toBeLessThanOrEqual(8000)
    expect(hits.slice(3).map((h) => h.ttlMs)).toEqual([fresh, open_, kept])
    for (const [name, most] of [
      ['new', 5000],
      ['open', 3000],
      ['kept', 8000],
    ] as const) {
      const ttl = await redis.pttl(name)
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(most)
    }
  })

  it('when hits are made while a command is out, then they wait for it and go together in the next', async () => {
    open()
    await kv.ping()
    let release!: () => void
    gate = new Promise((resolve) => (release = resolve))
    const first = kv.hitWindow('c', 1, 10_000)
    while (commands === 0) await new Promise((resolve) => setImmediate(resolve))

    const later = Array.from({ length: 10 }, () => kv.hitWindow('c', 2, 10_000))
    await new Promise((resolve) => setImmediate(resolve))
    expect(commands).toBe(1)
    gate = null
    release()

    const counts = [(await first).count, ...(await Promise.all(later)).map((h) => h.count)]
    expect(commands).toBe(2)
    expect(counts).toEqual([1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21])
  })

  it('when more hits wait than one command carries, then they go out in several, in order', async () => {
    open({ maxHitsPerCommand: 4 })
    await kv.ping()

    const hits = await Promise.all(Array.from({ length: 10 }, () => kv.hitWindow('c', 1, 10_000)))

    expect(commands).toBe(3)
    expect(hits.map((h) => h.count)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  })

  it('when the command fails, then every hit in it fails and the next hits work', async () => {
    open()
    await kv.ping()
    failNext = true

    const failed = await Promise.allSettled(Array.from({ length: 5 }, () => kv.hitWindow('c', 1, 10_000)))
    const after = await kv.hitWindow('c', 1, 10_000)

    expect(failed.every((r) => r.status === 'rejected')).toBe(true)
    expect(after.count).toBe(1)
  })

  it('when one hit in a command cannot be counted or read, then only it is affected, and the others are answered', async () => {
    open()
    await kv.ping()
    await kv.redis.rpush('a-list', 'x')
    await kv.set('a', 'A')

    const [before, wrongCounter, wrongRead, after] = await Promise.allSettled([
      kv.hitWindow('c', 1, 10_000, ['a']),
      kv.hitWindow('a-list', 1, 10_000),
      kv.hitWindow('c', 1, 10_000, ['a-list']),
      kv.hitWindow('c', 1, 10_000, ['a']),
    ])

    expect(commands).toBe(1)
    expect(before).toMatchObject({ status: 'fulfilled', value: { count: 1, values: ['A'] } })
    expect(wrongCounter).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({ message: expect.stringMatching(/WRONGTYPE/) }),
    })
    // Counted, but its read failed: values null, so the caller knows it learnt nothing.
    expect(wrongRead).toMatchObject({ status: 'fulfilled', value: { count: 2, values: null } })
    expect(after).toMatchObject({ status: 'fulfilled', value: { count: 3, values: ['A'] } })
  })

  it('when Redis does not answer in time, then the waiting hits fail, and once the pause is over the next command goes out', async () => {
    open({ hitTimeoutMs: 100, pauseMs: 300 })
    await kv.ping()
    gate = new Promise(() => {}) // this command never reaches Redis
    const started = Date.now()

    const stuck = await Promise.allSettled([kv.hitWindow('c', 1, 10_000), kv.hitWindow('c', 1, 10_000)])
    gate = null
    // Paused: a hit right after fails at once without a command.
    await expect(kv.hitWindow('c', 1, 10_000)).rejects.toThrow(/paused/)
    await new Promise((resolve) => setTimeout(resolve, 350))
    const after = await kv.hitWindow('c', 1, 10_000)

    expect(stuck.map((r) => r.status)).toEqual(['rejected', 'rejected'])
    expect(String((stuck[0] as PromiseRejectedResult).reason)).toMatch(/did not answer within 100 ms/)
    expect(Date.now() - started).toBeLessThan(2000)
    expect(after.count).toBe(1)
    expect(commands).toBe(2)
  })

  it('when too many hits already wait, then a new one fails at once', async () => {
    open({ maxPendingHits: 3 })
    await kv.ping()
    let release!: () => void
    gate = new Promise((resolve) => (release = resolve))
    const first = kv.hitWindow('c', 1, 10_000)
    while (commands === 0) await new Promise((resolve) => setImmediate(resolve))
    const waiting = [1, 2, 3].map(() => kv.hitWindow('c', 1, 10_000))
    await new Promise((resolve) => setImmediate(resolve))

    await expect(kv.hitWindow('c', 1, 10_000)).rejects.toThrow(/busy/)
    gate = null
    release()
    await expect(Promise.all([first, ...waiting])).resolves.toHaveLength(4)
  })
})

describeWhen(REDIS, 'RedisKeyValueStore hitWindow while not connected', () => {
  it('when the connection is gone, then hitWindow fails at once instead of queueing, and works again once back', async () => {
    // No automatic reconnect: the test says when the connection comes back.
    const kv = new RedisKeyValueStore(
      new Redis(redisUrl!, { keyPrefix: `${uniqueName('kvhitdown')}:`, retryStrategy: () => null }),
    )
    try {
      await kv.ping()
      kv.redis.disconnect()
      while (kv.redis.status === 'ready') await sleep(1)
      const started = Date.now()

      await expect(kv.hitWindow('hits', 1, 10_000)).rejects.toThrow(/not connected/)
      expect(Date.now() - started).toBeLessThan(500)

      await kv.redis.connect()
      await expect(kv.hitWindow('hits', 1, 10_000)).resolves.toMatchObject({ count: 1 })
    } finally {
      await kv.redis.del('hits')
      await kv.close()
    }
  })
})

describe('RedisKeyValueStore after Redis lost its scripts', () => {
  it('when a SCRIPT FLUSH (or a restart) dropped them, then the next calls load them again and count as before', async () => {
    // A Redis of the test's own: flushing the shared one's scripts would touch other suites.
    const own = await startOwnRedis()
    const kv = RedisKeyValueStore.connect(own.url, `${uniqueName('kvflush')}:`)
    try {
      await expect(kv.hitWindow('hits', 1, 10_000, ['other'])).resolves.toMatchObject({ count: 1 })
      await expect(kv.incrWithTtl('counter', 1, 10_000)).resolves.toBe(1)

      await kv.redis.script('FLUSH')

      // ioredis answers NOSCRIPT by sending the script itself (the reject path of its
      // commands, which patches/ioredis@6.0.0.patch moves): each call still counts once.
      await expect(kv.hitWindow('hits', 2, 10_000, ['other'])).resolves.toMatchObject({
        count: 3,
        values: [null],
      })
      await expect(kv.incrWithTtl('counter', 1, 10_000)).resolves.toBe(2)
      await expect(kv.hitWindow('hits', 1, 10_000)).resolves.toMatchObject({ count: 4 })
    } finally {
      await kv.close()
      await own.stop()
    }
  })

  it('when ioredis is installed, then it carries the patch that keeps its commands out of the old generation', () => {
    // README, "Memory and start-up": without it every command was promoted under load.
    const command = require('ioredis').Command as { prototype: Record<string, unknown> }
    expect(typeof command.prototype._convertError).toBe('function')
  })
})

describe('MemoryKeyValueStore reconnect', () => {
  it('when listeners register, then they are never called: memory has no connection to lose', async () => {
    const kv = new MemoryKeyValueStore()
    const listener = jest.fn()
    kv.onReconnect(listener)
    await kv.set('a', '1')
    expect(listener).not.toHaveBeenCalled()
    await kv.close()
  })
})
