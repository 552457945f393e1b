import { randomBytes } from 'node:crypto'
import express from 'express'
import { Redis } from 'ioredis'
import { request } from '../src/testing.ts'
import { errorMiddleware } from '../src/errors.ts'
import { type KeyValueStore, MemoryKeyValueStore, RedisKeyValueStore } from '../src/kv.ts'
import {
  addressKey,
  createRateLimiter,
  type RateLimitDecision,
  rateLimitMiddleware,
} from '../src/rate-limit.ts'
import { deleteRedisKeys, describeWhen, uniqueName } from '../src/testing.ts'

const redisUrl = process.env.REDIS_URL
const REDIS = { env: ['REDIS_URL'] }

function limiterName(): string {
  return `test-${randomBytes(4).toString('hex')}`
}

describe('createRateLimiter over memory kv', () => rateLimiterSuite('memory'))
describeWhen(REDIS, 'createRateLimiter over redis kv', () => rateLimiterSuite('redis'))

function rateLimiterSuite(name: 'memory' | 'redis'): void {
  let kv: KeyValueStore
  let prefix: string

  beforeAll(() => {
    prefix = `${uniqueName('rltest')}:`
    kv = name === 'redis' ? RedisKeyValueStore.connect(redisUrl!, prefix) : new MemoryKeyValueStore()
  })

  afterAll(async () => {
    if (kv instanceof RedisKeyValueStore) {
      await deleteRedisKeys(redisUrl!, prefix)
    }
    await kv.close()
  })

  it('when N requests are made, then N are allowed with remaining counting down, and the next is refused', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 3, durationSec: 60 })

    const decisions = []
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('client-a'))

    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false])
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0])
    expect(decisions.every((d) => d.limit === 3)).toBe(true)
  })

  it('when several points are spent at once, then each is decided as that many calls in a row would be', async () => {
    const one = createRateLimiter({ kv, name: limiterName(), points: 5, durationSec: 60 })
    const many = createRateLimiter({ kv, name: limiterName(), points: 5, durationSec: 60 })
    await one.consume('client-a')
    await many.consume('client-a')

    const singly: RateLimitDecision[] = []
    for (let i = 0; i < 6; i++) singly.push(await one.consume('client-a'))
    const atOnce = await many.consumeEach('client-a', 6)

    const shown = (ds: typeof singly) =>
      ds.map(({ allowed, remaining, limit }) => ({ allowed, remaining, limit }))
    expect(shown(atOnce)).toEqual(shown(singly))
    expect(atOnce.map((d) => d.allowed)).toEqual([true, true, true, true, false, false])
    // The points count as spent: the next call is refused like the one after six single calls.
    await expect(many.consume('client-a')).resolves.toMatchObject({ allowed: false, remaining: 0 })
  })

  it('when a decision is made, then resetAt is in the future and within the window', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 1, durationSec: 60 })
    const before = Date.now()

    const allowed = await limiter.consume('client-a')
    const refused = await limiter.consume('client-a')

    for (const d of [allowed, refused]) {
      expect(d.resetAt.getTime()).toBeGreaterThan(before)
      expect(d.resetAt.getTime()).toBeLessThanOrEqual(Date.now() + 60_000)
    }
    expect(refused.allowed).toBe(false)
  })

  it('when one client is refused, then another key still has its full allowance', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 1, durationSec: 60 })
    await limiter.consume('client-a')

    const otherClient = await limiter.consume('client-b')

    expect(otherClient).toMatchObject({ allowed: true, remaining: 0 })
  })

  it('when two limiters share a kv under different names, then their counts are separate', async () => {
    const a = createRateLimiter({ kv, name: limiterName(), points: 1, durationSec: 60 })
    const b = createRateLimiter({ kv, name: limiterName(), points: 1, durationSec: 60 })
    await a.consume('same-key')

    await expect(b.consume('same-key')).resolves.toMatchObject({ allowed: true })
  })

  it('when the window passes, then the client is allowed again', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 1, durationSec: 1 })
    await limiter.consume('client-a')
    const refused = await limiter.consume('client-a')

    await new Promise((r) => setTimeout(r, Math.max(0, refused.resetAt.getTime() - Date.now()) + 100))

    await expect(limiter.consume('client-a')).resolves.toMatchObject({ allowed: true })
  })

  it('when 20 requests race for 5 points, then exactly 5 are allowed', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 5, durationSec: 60 })

    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('burst')))

    expect(decisions.filter((d) => d.allowed)).toHaveLength(5)
  })

  it('when consumeAndRead is used, then it spends from the same window as consume and brings the values back', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 2, durationSec: 60 })
    const [present, absent] = [`present-${limiterName()}`, `absent-${limiterName()}`]
    await kv.set(present, 'here', 60_000)

    const first = await limiter.consume('client-a')
    const second = await limiter.consumeAndRead('client-a', [absent, present])
    const third = await limiter.consumeAndRead('client-a', [present])

    expect([first.allowed, second.decision.allowed, third.decision.allowed]).toEqual([true, true, false])
    expect(second.values).toEqual([null, 'here'])
    expect(third.values).toEqual(['here'])
  })

  it('when consumeEachAndRead is used, then its points are decided as consumeEach’s and the values come back', async () => {
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 3, durationSec: 60 })
    const present = `present-${limiterName()}`
    await kv.set(present, 'here', 60_000)

    await limiter.consume('client-a')
    const { decisions, values } = await limiter.consumeEachAndRead('client-a', 3, [
      present,
      `absent-${limiterName()}`,
    ])

    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 1],
      [true, 0],
      [false, 0],
    ])
    expect(values).toEqual(['here', null])
    await expect(limiter.consume('client-a')).resolves.toMatchObject({ allowed: false })
  })

  it('when kv fails, then the limit still holds (counted in this process) and consumeAndRead reads nothing', async () => {
    const failing: KeyValueStore = Object.assign(Object.create(kv) as KeyValueStore, {
      hitWindow: async () => {
        throw new Error('kv down')
      },
    })
    const limiter = createRateLimiter({ kv: failing, name: limiterName(), points: 2, durationSec: 60 })

    const decisions = [
      await limiter.consumeAndRead('client-a', ['anything']),
      await limiter.consumeAndRead('client-a', ['anything']),
      await limiter.consumeAndRead('client-a', ['anything']),
    ]

    expect(decisions.map((d) => d.decision.allowed)).toEqual([true, true, false])
    expect(decisions.map((d) => d.values)).toEqual([null, null, null])
    expect(decisions[2]!.decision.resetAt.getTime()).toBeGreaterThan(Date.now())
  })

  describe('rateLimitMiddleware through express', () => {
    function appWith(points: number) {
      const app = express()
      app.set('trust proxy', 'loopback')
      app.use(rateLimitMiddleware(createRateLimiter({ kv, name: limiterName(), points, durationSec: 60 })))
      app.get('/thing', (_req, res) => {
        res.json({ ok: true })
      })
      app.use(errorMiddleware({ style: 'rest' }))
      return app
    }

    it('when allowed, then RateLimit-* headers are set and there is no Retry-After', async () => {
      const app = appWith(2)

      const res = await request(app).get('/thing')

      expect(res.status).toBe(200)
      expect(res.headers['ratelimit-limit']).toBe('2')
      expect(res.headers['ratelimit-remaining']).toBe('1')
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0)
      expect(Number(res.headers['ratelimit-reset'])).toBeLessThanOrEqual(60)
      expect(res.headers['retry-after']).toBeUndefined()
    })

    it('when the limit is used up, then it is a 429 envelope with details.reset_at and Retry-After', async () => {
      const app = appWith(1)
      await request(app).get('/thing').expect(200)
      const before = Date.now()

      const res = await request(app).get('/thing')

      expect(res.status).toBe(429)
      expect(res.headers['ratelimit-remaining']).toBe('0')
      const retryAfter = Number(res.headers['retry-after'])
      expect(retryAfter).toBeGreaterThanOrEqual(1)
      expect(retryAfter).toBeLessThanOrEqual(60)
      expect(res.body).toMatchObject({
        success: false,
        error: { code: 'rate_limit_exceeded', message: 'rate limit exceeded', details: { limit: 1 } },
      })
      const resetAt = Date.parse(res.body.error.details.reset_at)
      expect(res.body.error.details.reset_at).toBe(new Date(resetAt).toISOString())
      expect(resetAt).toBeGreaterThan(before)
    })

    it('when clients differ by X-Forwarded-For through a trusted proxy, then each has its own count', async () => {
      const app = appWith(1)
      await request(app).get('/thing').set('X-Forwarded-For', '198.51.100.1').expect(200)

      const res = await request(app).get('/thing').set('X-Forwarded-For', '198.51.100.2')

      expect(res.status).toBe(200)
    })
  })
}

describeWhen(REDIS, 'createRateLimiter over Redis shared by replicas', () => {
  it('when the Redis connection is lost, then requests are limited in memory at once, and shared again once it is back', async () => {
    const prefix = `${uniqueName('rldown')}:`
    // No automatic reconnect: the test says when the connection comes back.
    const kv = new RedisKeyValueStore(new Redis(redisUrl!, { keyPrefix: prefix, retryStrategy: () => null }))
    const limiter = createRateLimiter({ kv, name: limiterName(), points: 2, durationSec: 60 })
    try {
      await expect(limiter.consume('client')).resolves.toMatchObject({ allowed: true, remaining: 1 })
      kv.redis.disconnect()
      while (kv.redis.status === 'ready') await new Promise((r) => setTimeout(r, 1))

      // Memory starts its own count: this process alone, still limited.
      const down = [
        await limiter.consume('client'),
        await limiter.consume('client'),
        await limiter.consume('client'),
      ]
      expect(down.map((d) => d.allowed)).toEqual([true, true, false])

      await kv.redis.connect()
      await expect(limiter.consume('client')).resolves.toMatchObject({ allowed: true, remaining: 0 })
      await expect(limiter.consume('client')).resolves.toMatchObject({ allowed: false })
    } finally {
      await deleteRedisKeys(redisUrl!, prefix)
      await kv.close()
    }
  })

  it('when two replicas with fresh connections share one limiter name, then they share one count', async () => {
    const prefix = `${uniqueName('rlshared')}:`
    const replicaA = RedisKeyValueStore.connect(redisUrl!, prefix)
    const replicaB = RedisKeyValueStore.connect(redisUrl!, prefix)
    const name = limiterName()
    const limiterA = createRateLimiter({ kv: replicaA, name, points: 2, durationSec: 60 })
    const limiterB = createRateLimiter({ kv: replicaB, name, points: 2, durationSec: 60 })
    try {
      const first = await limiterA.consume('client')
      const second = await limiterB.consume('client')
      const third = await limiterA.consume('client')

      expect([first.allowed, second.allowed, third.allowed]).toEqual([true, true, false])
      expect(second.remaining).toBe(0)
    } finally {
      await deleteRedisKeys(redisUrl!, prefix)
      await replicaA.close()
      await replicaB.close()
    }
  })
})

describe('addressKey', () => {
  it('when the address is IPv4 (or IPv4-mapped IPv6), then it is the key as it is', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7')
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7')
  })

  it('when the address is IPv6, then every address of its /64 shares one key', () => {
    const a = addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')
    expect(a).toBe('2001:db8:1:2::/64')
    expect(addressKey('2001:db8:1:2::1')).toBe(a)
    expect(addressKey('2001:db8:1:3::1')).not.toBe(a)
  })

  it('when another prefix is configured, then the network has that many bits', () => {
    expect(addressKey('2001:db8:1:2:3:4:5:6', 48)).toBe('2001:db8:1::/48')
    expect(addressKey('2001:db8:1:2:3:4:5:6', 56)).toBe('2001:db8:1::/56')
    expect(addressKey('2001:db8:1:2ff:3:4:5:6', 56)).toBe('2001:db8:1:200::/56')
    expect(addressKey('2001:db8::5', 128)).toBe('2001:db8:0:0:0:0:0:5')
  })

  it('when the address is missing or does not parse, then it is used as it is', () => {
    expect(addressKey(undefined)).toBe('unknown')
    expect(addressKey('not-an-ip')).toBe('not-an-ip')
  })
})
