import { jsonBytesOf } from '@quartet/core/json-text'
import { heldCalls } from '@quartet/core/testing'
import { cachedViews } from '../../src/store/view-cache.ts'

/** The views cache's own rules, apart from the tokens' (view-cache.test.ts in integration). */
describe('cachedViews', () => {
  let now = 0
  let loads = 0
  const load = (value: object, validUntil?: number) => async () => {
    loads++
    return validUntil === undefined
      ? { value: structuredClone(value) }
      : { value: structuredClone(value), validUntil }
  }
  beforeEach(() => {
    now = 1_000
    loads = 0
  })

  it('when the token is the one a value was read under, then the value is served, frozen and with its JSON bytes', async () => {
    const views = cachedViews({ maxAgeMs: 10_000, now: () => now })
    const first = await views.read('acct', 't1', 'quota', load({ used: 1 }))
    const second = await views.read('acct', 't1', 'quota', load({ used: 2 }))
    expect(second).toBe(first)
    expect(loads).toBe(1)
    expect(Object.isFrozen(first)).toBe(true)
    expect(jsonBytesOf(first)?.toString()).toBe('{"used":1}')
  })

  it('when the token differs, there is none, or the value is too old, then it is read again', async () => {
    const views = cachedViews({ maxAgeMs: 10_000, now: () => now })
    await views.read('acct', 't1', 'quota', load({ used: 1 }))
    expect(await views.read('acct', 't2', 'quota', load({ used: 2 }))).toEqual({ used: 2 })
    expect(await views.read('acct', null, 'quota', load({ used: 3 }))).toEqual({ used: 3 })
    // Read without a token: nothing kept, so the t2 value is still there.
    expect(await views.read('acct', 't2', 'quota', load({ used: 4 }))).toEqual({ used: 2 })
    now += 10_000
    expect(await views.read('acct', 't2', 'quota', load({ used: 5 }))).toEqual({ used: 5 })
    expect(loads).toBe(4)
  })

  it('when a value’s own time runs out, then it is read again even under its token', async () => {
    const views = cachedViews({ maxAgeMs: 60_000, now: () => now })
    await views.read('acct', 't', 'page', load({ status: 'active' }, 1_500))
    now = 1_499
    expect(await views.read('acct', 't', 'page', load({ status: 'grace' }))).toEqual({ status: 'active' })
    now = 1_500
    expect(await views.read('acct', 't', 'page', load({ status: 'grace' }))).toEqual({ status: 'grace' })
  })

  it('when accounts and keys differ, then their values are kept apart', async () => {
    const views = cachedViews({ maxAgeMs: 60_000, now: () => now })
    await views.read('a', 't', 'k', load({ v: 'a' }))
    await views.read('b', 't', 'k', load({ v: 'b' }))
    await views.read('a', 't', 'k2', load({ v: 'a2' }))
    expect(await views.read('a', 't', 'k', load({}))).toEqual({ v: 'a' })
    expect(await views.read('b', 't', 'k', load({}))).toEqual({ v: 'b' })
    expect(await views.read('a', 't', 'k2', load({}))).toEqual({ v: 'a2' })
    expect(loads).toBe(3)
  })

  it('when more is kept than the budget, then the least recently used values go first, and one too large is not kept', async () => {
    const filler = 'x'.repeat(400)
    // Each value costs about 2 × 420 bytes: a 16 kB budget keeps 19 of them, and none over 1 kB.
    const views = cachedViews({ maxAgeMs: 60_000, maxBytes: 16_000, now: () => now })
    for (let i = 0; i < 19; i++) await views.read('a', 't', `k${i}`, load({ filler }))
    now += 1_000 // a value moves to the recently used end at most once a second
    await views.read('a', 't', 'k0', load({ filler })) // k0 is now the most recently used
    for (let i = 19; i < 22; i++) await views.read('a', 't', `k${i}`, load({ filler }))
    loads = 0
    for (const kept of ['k0', 'k4', 'k21']) await views.read('a', 't', kept, load({ filler }))
    expect(loads).toBe(0)
    for (const gone of ['k1', 'k2', 'k3']) await views.read('a', 't', gone, load({ filler }))
    expect(loads).toBe(3)

    const big = { filler: 'y'.repeat(600) }
    await views.read('a', 't', 'big', load(big))
    await views.read('a', 't', 'big', load(big))
    expect(loads).toBe(5)
  })

  it('when requests miss one value at once under its token, then one read serves them all; another token, no token, or a lost kv read on their own', async () => {
    let lost = () => {}
    const views = cachedViews({ maxAgeMs: 60_000, now: () => now, onLost: (listener) => (lost = listener) })
    const calls = heldCalls()
    const slow = (value: object) => async () => {
      loads++
      await calls.hold()
      return { value: structuredClone(value) }
    }

    const same = Array.from({ length: 5 }, () => views.read('a', 't', 'k', slow({ v: 1 })))
    const other = views.read('a', 't2', 'k', slow({ v: 2 }))
    const none = views.read('a', null, 'k', slow({ v: 3 }))
    expect(loads).toBe(3)
    calls.open()
    const values = await Promise.all(same)
    expect(values.every((v) => v === values[0] && Object.isFrozen(v))).toBe(true)
    expect(values[0]).toEqual({ v: 1 })
    expect(await other).toEqual({ v: 2 })
    expect(await none).toEqual({ v: 3 })

    // A read out when kv may have lost tokens is not joined: the next miss reads again.
    loads = 0
    const before = views.read('b', 't', 'k', slow({ v: 4 }))
    lost()
    const after = views.read('b', 't', 'k', slow({ v: 5 }))
    expect(loads).toBe(2)
    calls.open()
    expect([await before, await after]).toEqual([{ v: 4 }, { v: 5 }])

    // A failed read fails those that joined it, and the next miss reads again.
    loads = 0
    const failing = async () => {
      loads++
      await calls.hold()
      throw new Error('database gone')
    }
    const failed = Array.from({ length: 3 }, () => views.read('c', 't', 'k', failing))
    calls.open()
    const settled = await Promise.allSettled(failed)
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(loads).toBe(1)
    expect(await views.read('c', 't', 'k', load({ v: 6 }))).toEqual({ v: 6 })
  })

  it('when kv may have lost tokens, then every value goes, and a read begun before is not kept', async () => {
    let lost = () => {}
    const views = cachedViews({ maxAgeMs: 60_000, now: () => now, onLost: (listener) => (lost = listener) })
    await views.read('a', 't', 'k', load({ v: 1 }))
    lost()
    expect(await views.read('a', 't', 'k', load({ v: 2 }))).toEqual({ v: 2 })
    let release = () => {}
    const slow = views.read('a', 't', 'slow', async () => {
      await new Promise<void>((resolve) => (release = resolve))
      return { value: { v: 3 } }
    })
    lost()
    release()
    await slow
    loads = 0
    await views.read('a', 't', 'slow', load({ v: 4 }))
    expect(loads).toBe(1)
  })
})
