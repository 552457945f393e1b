import { setTimeout as sleep } from 'node:timers/promises'
import { RedisKeyValueStore } from '@quartet/core/kv'
import { describeWhen, type OwnRedis, startOwnRedis } from '@quartet/core/testing'
import { type Harness, startHarness, testDeps } from './harness.ts'

/**
 * Faults are tested with a real process: a `redis-server` of the test's own (never the shared
 * one) that the test freezes (SIGSTOP) and stops while pickup-share uses it. Without Debian's
 * redis-server the suite fails under CI and skips elsewhere (describeWhen).
 */
export function describeOwnRedis(title: string, suite: () => void): void {
  describeWhen({ programs: [{ name: 'redis-server', debian: 'redis-server' }] }, title, suite)
}

export interface OwnRedisHarness {
  h: Harness
  redis: OwnRedis
}

/**
 * The app on a Redis of the test's own, for beforeAll; the returned `close` for afterAll ends
 * the app, the server (thawed first, should the test have left it frozen) and the client.
 */
export async function harnessOnOwnRedis(
  deps: ReturnType<typeof testDeps>,
  keyPrefix: string,
): Promise<OwnRedisHarness & { close(): Promise<void> }> {
  const redis = await startOwnRedis()
  const kv = RedisKeyValueStore.connect(redis.url, keyPrefix)
  const h = await startHarness(deps, { kv })
  return {
    h,
    redis,
    close: async () => {
      await h.close()
      redis.thaw()
      await redis.stop()
      const ended = new Promise((resolve) => kv.redis.once('end', resolve))
      kv.redis.disconnect()
      await Promise.race([ended, sleep(2000)])
    },
  }
}

/**
 * For a test file: the app on a Redis of its own (harnessOnOwnRedis) from beforeAll to
 * afterAll, with a test database of the file's own. Read `h` and `redis` inside the tests.
 */
export function useOwnRedisHarness(keyPrefix: string): OwnRedisHarness {
  const deps = testDeps()
  let own: (OwnRedisHarness & { close(): Promise<void> }) | undefined
  beforeAll(async () => {
    own = await harnessOnOwnRedis(deps, keyPrefix)
  })
  afterAll(async () => {
    await own?.close()
  })
  const started = () => {
    if (!own) throw new Error('the own-Redis harness is not started (outside a test?)')
    return own
  }
  return {
    get h() {
      return started().h
    },
    get redis() {
      return started().redis
    },
  }
}

export async function timed<T>(f: () => Promise<T>): Promise<[T, number]> {
  const started = performance.now()
  const result = await f()
  return [result, performance.now() - started]
}
