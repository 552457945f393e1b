import { hashToken } from '@quartet/core/auth'
import { fixedClock } from '@quartet/core/clock'
import type { KeyValueStore } from '@quartet/core/kv'
import { request } from '@quartet/core/testing'
import { recordUsage } from '../../src/domain/usage.ts'
import { usageWindows } from '../../src/domain/windows.ts'
import { createKeyVersions } from '../../src/store/key-record-cache.ts'
import { createStores } from '../../src/store/stores.ts'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

/**
 * GET /api/v1/key is cached per process under a version token in kv. Two apps on the same
 * database and kv stand for two replicas: each has its own cache, so a change made through one
 * must be seen at once by the other.
 */
async function setup(clock = fixedClock('2026-11-22T12:00:00Z'), options: { tokenExists?: boolean } = {}) {
  const admin = await mintKey(deps, { isManagementKey: true })
  const subject = await mintKey(deps, { workspaceId: admin.workspaceId, limitMicros: 10_000_000n })
  const reader = buildApp(deps, { clock })
  const writer = buildApp(deps, { clock })
  const read = async () =>
    (await request(reader).get('/api/v1/key').set(bearer(subject.key)).expect(200)).body.data
  const post = (events: unknown[]) =>
    request(writer).post('/api/v1/usage').set(bearer(admin.key)).send({ events }).expect(200)
  // Any earlier read gives the key its version token; only with one is a read cached.
  if (options.tokenExists ?? true) await createKeyVersions(deps.kv).start(subject.hash)
  return { admin, subject, reader, writer, read, post, clock }
}

/** The test kv with some methods replaced: a kv that fails, or whose reconnects a test fires. */
function kvWith(overrides: Partial<KeyValueStore>): KeyValueStore {
  return new Proxy(deps.kv, {
    get(target, property, receiver) {
      if (property in overrides) return overrides[property as keyof KeyValueStore]
      const value: unknown = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * The test kv, with reconnects the test fires: `reconnect()` at once, or just after the next read
 * of a version token (by the store's own `get`, or in the rate-limit step's `hitWindow`).
 */
function reconnectingKv() {
  const listeners: Array<() => void> = []
  const reconnect = () => {
    for (const listener of listeners) listener()
  }
  let afterNextTokenRead = false
  const read = (keys: readonly string[]) => {
    if (afterNextTokenRead && keys.some((key) => key.startsWith('key-version:'))) {
      afterNextTokenRead = false
      reconnect()
    }
  }
  const kv = kvWith({
    onReconnect: (listener) => {
      listeners.push(listener)
      return () => {}
    },
    get: async (key) => {
      const value = await deps.kv.get(key)
      read([key])
      return value
    },
    hitWindow: async (key, by, windowMs, reads = []) => {
      const hit = await deps.kv.hitWindow(key, by, windowMs, reads)
      read(reads)
      return hit
    },
  })
  return { kv, reconnect, reconnectAfterNextTokenRead: () => void (afterNextTokenRead = true) }
}

/** A change made around the service (SQL by hand): only the cache's maximum age covers it. */
const setLimitBehindTheServicesBack = (hash: string, micros: bigint) =>
  deps.db.apiKey.update({ where: { hash }, data: { limitMicros: micros } })

describe('the key record cache', () => {
  it('when a key has no version token yet, then its first read is not cached, and the next is', async () => {
    const { subject, read } = await setup(undefined, { tokenExists: false })
    expect(await deps.kv.get(`key-version:${subject.hash}`)).toBeNull()

    expect((await read()).limit).toBe(10)
    expect(await deps.kv.get(`key-version:${subject.hash}`)).not.toBeNull()
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    // Not cached (no token was there to vouch for it): the database answers, and is cached now.
    expect((await read()).limit).toBe(20)
    await setLimitBehindTheServicesBack(subject.hash, 30_000_000n)
    expect((await read()).limit).toBe(20)
  })

  it('when made-up keys are tried, then no version token is left behind in kv', async () => {
    const app = buildApp(deps)
    const made = 'sk-qk-v1-' + 'ef'.repeat(32)

    await request(app).get('/api/v1/key').set(bearer(made)).expect(401)
    await request(app).get('/api/v1/key').set(bearer(made)).expect(401)

    expect(await deps.kv.get(`key-version:${hashToken(made)}`)).toBeNull()
  })

  it('when nothing changed, then a cached record answers without asking the database', async () => {
    const { subject, read } = await setup()
    expect((await read()).limit).toBe(10)

    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    // Served from the cache: the database now says 20.
    expect((await read()).limit).toBe(10)
  })

  it('when the maximum age has passed, then the record is read again', async () => {
    const { subject, read, clock } = await setup()
    await read()
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    clock.advance(9_999)
    expect((await read()).limit).toBe(10)
    clock.advance(1)
    expect((await read()).limit).toBe(20)
  })

  it('when another replica records usage, then the next read shows it at once', async () => {
    const { subject, read, post } = await setup()
    expect((await read()).usage).toBe(0)

    await post([{ id: 'u1', key_hash: subject.hash, amount: 1.25 }])

    expect(await read()).toMatchObject({ usage: 1.25, usage_daily: 1.25, limit_remaining: 8.75 })
  })

  it('when a replayed event changes nothing, then the cached record stays valid and correct', async () => {
    const { subject, read, post } = await setup()
    await post([{ id: 'u1', key_hash: subject.hash, amount: 1 }])
    expect((await read()).usage).toBe(1)

    await post([{ id: 'u1', key_hash: subject.hash, amount: 1 }])

    expect((await read()).usage).toBe(1)
  })

  it('when another replica disables the key, then the next read is 401 API key disabled', async () => {
    const { admin, subject, reader, writer, read } = await setup()
    await read()

    await request(writer)
      .patch(`/api/v1/keys/${subject.hash}`)
      .set(bearer(admin.key))
      .send({ disabled: true })
      .expect(200)

    const res = await request(reader).get('/api/v1/key').set(bearer(subject.key)).expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'API key disabled' } })
  })

  it('when another replica changes the limit, then the next read shows the new limit', async () => {
    const { admin, subject, writer, read } = await setup()
    await read()

    await request(writer)
      .patch(`/api/v1/keys/${subject.hash}`)
      .set(bearer(admin.key))
      .send({ limit: 3, limit_reset: 'daily' })
      .expect(200)

    expect(await read()).toMatchObject({ limit: 3, limit_reset: 'daily', limit_remaining: 3 })
  })

  it('when another replica deletes the key, then the next read is 401 Invalid API key', async () => {
    const { admin, subject, reader, writer, read } = await setup()
    await read()

    await request(writer).delete(`/api/v1/keys/${subject.hash}`).set(bearer(admin.key)).expect(200)

    const res = await request(reader).get('/api/v1/key').set(bearer(subject.key)).expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'Invalid API key' } })
  })

  it('when the CLI records usage (its own stores, no cache), then the running service shows it at once', async () => {
    const { admin, subject, read } = await setup()
    await read()
    const cli = createStores(deps.db, deps.kv, { maxAgeMs: 0, now: Date.now, onBumpFailed: () => {} })

    await recordUsage(
      { usage: cli.usage, freeModel: cli.freeModel, clock: fixedClock('2026-11-22T12:00:00Z') },
      admin.workspaceId,
      [
        {
          id: 'cli-1',
          keyHash: subject.hash,
          amountMicros: 2_000_000n,
          byok: false,
          freeModel: false,
          occurredAt: null,
        },
      ],
    )

    expect((await read()).usage).toBe(2)
  })

  it('when kv forgets the version token (a Redis restart), then the record is read again', async () => {
    const { subject, read } = await setup()
    await read()
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    await deps.kv.del(`key-version:${subject.hash}`)

    expect((await read()).limit).toBe(20)
  })

  it('when the kv connection comes back (Redis restarted or failed over), then every cached record is dropped', async () => {
    const { kv, reconnect } = reconnectingKv()
    const { subject } = await setup()
    const app = buildApp({ ...deps, kv }, { clock: fixedClock('2026-11-22T12:00:00Z') })
    const read = async () =>
      (await request(app).get('/api/v1/key').set(bearer(subject.key)).expect(200)).body.data
    await read()
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)
    expect((await read()).limit).toBe(10)

    reconnect()

    expect((await read()).limit).toBe(20)
  })

  it('when the kv connection comes back while a read is under way, then that read is not cached', async () => {
    // GET /api/v1/key reads the token along with its rate-limit step: the connection comes back
    // just after that read, before the database answers.
    const { kv, reconnectAfterNextTokenRead } = reconnectingKv()
    const { subject } = await setup()
    const app = buildApp({ ...deps, kv }, { clock: fixedClock('2026-11-22T12:00:00Z') })
    const read = async () =>
      (await request(app).get('/api/v1/key').set(bearer(subject.key)).expect(200)).body.data

    reconnectAfterNextTokenRead()
    expect((await read()).limit).toBe(10)
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    expect((await read()).limit).toBe(20)
  })

  it('when the store reads the token itself and the connection comes back during that read, then it is not cached', async () => {
    const { kv, reconnectAfterNextTokenRead } = reconnectingKv()
    const { subject } = await setup()
    const { keys } = createStores(deps.db, kv, { maxAgeMs: 10_000, now: Date.now, onBumpFailed: () => {} })
    const windows = usageWindows(new Date('2026-11-22T12:00:00Z'))

    reconnectAfterNextTokenRead()
    expect((await keys.findWithUsage(subject.hash, windows))?.limitMicros).toBe(10_000_000n)
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    expect((await keys.findWithUsage(subject.hash, windows))?.limitMicros).toBe(20_000_000n)
  })

  it('when the UTC day (here also the week) turns, then the cached record of yesterday is not used', async () => {
    // 2026-11-22 is a Sunday.
    const clock = fixedClock('2026-11-22T23:59:59.000Z')
    const { subject, read, post } = await setup(clock)
    await post([{ id: 'late', key_hash: subject.hash, amount: 1, occurred_at: '2026-11-22T23:59:58.000Z' }])
    expect((await read()).usage_daily).toBe(1)

    clock.set('2026-11-23T00:00:00.000Z')

    expect(await read()).toMatchObject({ usage: 1, usage_daily: 0, usage_weekly: 0, usage_monthly: 1 })
  })

  it('when kv cannot be read, then reads go to the database and stay correct', async () => {
    const { subject } = await setup()
    const down = async (): Promise<never> => {
      throw new Error('kv down')
    }
    const failing = kvWith({ get: down, hitWindow: down })
    const app = buildApp({ ...deps, kv: failing }, { clock: fixedClock('2026-11-22T12:00:00Z') })
    await request(app).get('/api/v1/key').set(bearer(subject.key)).expect(200)
    await setLimitBehindTheServicesBack(subject.hash, 20_000_000n)

    const res = await request(app).get('/api/v1/key').set(bearer(subject.key)).expect(200)

    expect(res.body.data.limit).toBe(20)
  })

  it('when usage is posted in parallel while another replica reads, then the last read has the exact total', async () => {
    const { subject, read, post } = await setup()
    const batches = Array.from({ length: 20 }, (_, i) =>
      Array.from({ length: 5 }, (_, j) => ({ id: `p-${i}-${j}`, key_hash: subject.hash, amount: 0.01 })),
    )

    await Promise.all([...batches.map((events) => post(events)), ...batches.map(() => read())])

    expect(await read()).toMatchObject({ usage: 1, usage_daily: 1 })
  })
})
