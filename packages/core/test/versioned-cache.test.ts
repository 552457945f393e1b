import { heldCalls } from '../src/testing.ts'
import { VersionedCache, type VersionedCacheOptions } from '../src/versioned-cache.ts'

/**
 * The versioned cache's own rules. Its users prove the token protocol end to end against Redis
 * and Postgres: key-info key-cache.test.ts, dns-manager principal-cache.test.ts and
 * view-cache.test.ts (integration).
 */
describe('VersionedCache', () => {
  let now = 0
  let reads = 0
  let calls = heldCalls()
  let lost = () => {}
  const make = (options: Partial<VersionedCacheOptions<{ v: number }>> = {}) =>
    new VersionedCache<{ v: number }>({
      maxAgeMs: 10_000,
      now: () => now,
      onLost: (listener) => (lost = listener),
      ...options,
    })
  /** A read of the database that answers `v` at once. */
  const load = (v: number) => async () => {
    reads++
    return { v }
  }
  /** A read that waits until `calls.open()`, then answers `v` (or fails). */
  const held =
    (v: number, fails = false) =>
    async () => {
      reads++
      await calls.hold()
      if (fails) throw new Error('database gone')
      return { v }
    }
  const asked = () => ({ askedAt: performance.now() })

  beforeEach(() => {
    now = 1_000
    reads = 0
    calls = heldCalls()
    lost = () => {}
  })

  it('when asked under the token a value was read under, then it is served without a read', async () => {
    const cache = make()
    const first = await cache.read('k', 't', load(1), asked())
    expect(await cache.read('k', 't', load(2), asked())).toBe(first)
    expect(cache.get('k', 't')).toBe(first)
    expect(reads).toBe(1)
  })

  it('when the token differs, there is none, or the value is too old, then it is read again', async () => {
    const cache = make()
    await cache.read('k', 't1', load(1), asked())
    expect(await cache.read('k', 't2', load(2), asked())).toEqual({ v: 2 })
    expect(cache.get('k', 't1')).toBeUndefined()
    expect(await cache.read('k', null, load(3), asked())).toEqual({ v: 3 })
    // Read without a token: nothing kept, and what was kept before is gone.
    expect(cache.peek('k')).toBeUndefined()
    await cache.read('k', 't2', load(4), asked())
    now += 9_999
    expect(await cache.read('k', 't2', load(5), asked())).toEqual({ v: 4 })
    now += 1
    expect(await cache.read('k', 't2', load(6), asked())).toEqual({ v: 6 })
    expect(reads).toBe(5)
  })

  it('when a value’s own time runs out, then it is read again even under its token', async () => {
    const cache = make({ maxAgeMs: 60_000 })
    const options = { ...asked(), validUntil: () => 1_500 }
    await cache.read('k', 't', load(1), options)
    now = 1_499
    expect(await cache.read('k', 't', load(2), options)).toEqual({ v: 1 })
    now = 1_500
    expect(await cache.read('k', 't', load(3), options)).toEqual({ v: 3 })
  })

  it('when keepIf refuses a value, then it is answered and not kept', async () => {
    const cache = make()
    const options = { ...asked(), keepIf: (value: { v: number }) => value.v > 1 }
    await cache.read('k', 't', load(1), options)
    await cache.read('k', 't', load(2), options)
    await cache.read('k', 't', load(3), options)
    expect(reads).toBe(2)
  })

  it('when more values are kept than maxEntries, then the least recently used go first', async () => {
    const cache = make({ maxEntries: 3 })
    for (const key of ['a', 'b', 'c']) await cache.read(key, 't', load(0), asked())
    now += 1_000 // a value moves to the recently used end at most once a second
    expect(cache.get('a', 't')).toEqual({ v: 0 })
    await cache.read('d', 't', load(0), asked())
    expect(['a', 'b', 'c', 'd'].map((key) => cache.peek(key) !== undefined)).toEqual([
      true,
      false,
      true,
      true,
    ])
  })

  it('when kept values weigh more than the budget, then the least recently used go first, and one too heavy is not kept', async () => {
    const cache = make({ weight: { of: (value) => value.v, max: 1_600 } })
    for (const key of ['a', 'b', 'c', 'd']) await cache.read(key, 't', load(100), asked())
    await cache.read('heavy', 't', load(101), asked())
    expect(cache.peek('heavy')).toBeUndefined()
    for (let i = 0; i < 16; i++) await cache.read(`f${i}`, 't', load(100), asked())
    expect(['a', 'b', 'c', 'd', 'f0', 'f15'].map((key) => cache.peek(key) !== undefined)).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
    ])
  })

  it('when requests miss one key at once under one token, then one read serves them all and is kept; another token or none reads on its own', async () => {
    const cache = make()
    const same = Array.from({ length: 5 }, () => cache.read('k', 't', held(1), asked()))
    expect(reads).toBe(1)
    calls.open()
    const values = await Promise.all(same)
    expect(values.every((value) => value === values[0])).toBe(true)
    // Kept for the next request, as a read of its own would have been.
    expect(await cache.read('k', 't', load(2), asked())).toBe(values[0])
    expect(reads).toBe(1)

    const mine = cache.read('j', 't', held(3), asked())
    const other = cache.read('j', 't2', held(4), asked())
    const none = cache.read('j', null, held(5), asked())
    const alsoNone = cache.read('j', null, held(6), asked())
    expect(reads).toBe(5)
    calls.open()
    expect(await Promise.all([mine, other, none, alsoNone])).toEqual([{ v: 3 }, { v: 4 }, { v: 5 }, { v: 6 }])
  })

  it('when the token moves while a read is out, then its answer is never served under the new token', async () => {
    const cache = make()
    await cache.read('k', 't1', load(1), asked())
    now += 10_000
    // A reader asked t1, then the database; a writer commits and replaces the token with t2.
    const late = heldCalls()
    const before = cache.read(
      'k',
      't1',
      async () => {
        reads++
        await late.hold()
        return { v: 1 }
      },
      asked(),
    )
    const after = cache.read('k', 't2', held(2), asked())
    expect(reads).toBe(3)
    calls.open()
    expect(await after).toEqual({ v: 2 })
    expect(cache.get('k', 't2')).toEqual({ v: 2 })
    // The t1 read ends last, and is kept under t1, which no later reader asks with.
    late.open()
    expect(await before).toEqual({ v: 1 })
    expect(cache.get('k', 't2')).toBeUndefined()
    expect(await cache.read('k', 't2', load(3), asked())).toEqual({ v: 3 })
  })

  it('when the read fails, then those that joined it fail, nothing is kept, and the next miss reads again', async () => {
    const cache = make()
    const all = Array.from({ length: 3 }, () => cache.read('k', 't', held(1, true), asked()))
    calls.open()
    const settled = await Promise.allSettled(all)
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(reads).toBe(1)
    expect(cache.peek('k')).toBeUndefined()
    expect(await cache.read('k', 't', load(2), asked())).toEqual({ v: 2 })
  })

  it('when the version source may have lost tokens, then everything kept goes, no read out is joined, and a read asked before is not kept', async () => {
    const cache = make()
    await cache.read('k', 't', load(1), asked())
    const out = cache.read('slow', 't', held(2), asked())
    const justBefore = performance.now()
    lost()
    expect(cache.get('k', 't')).toBeUndefined()
    expect(cache.lostSince(justBefore)).toBe(true)
    const again = cache.read('slow', 't', held(3), asked())
    expect(reads).toBe(3)
    calls.open()
    expect([await out, await again]).toEqual([{ v: 2 }, { v: 3 }])
    // `out` ended first and was not kept (asked before the loss); `again` was.
    expect(cache.get('slow', 't')).toEqual({ v: 3 })

    // A token asked for before the loss, whose read begins after it, is not kept either.
    const askedBefore = asked()
    lost()
    await cache.read('late', 't', load(4), askedBefore)
    expect(cache.peek('late')).toBeUndefined()
  })

  it('when a value is kept without a token, then it is held for peek and holds no answer for get', () => {
    const cache = make()
    const value = { v: 1 }
    cache.keep('k', null, value, now)
    expect(cache.peek('k')).toMatchObject({ value, token: null })
    expect(cache.get('k', 't')).toBeUndefined()
    expect(cache.holds('k', value, 't')).toBe(false)
    cache.keep('k', 't', value, now)
    expect(cache.holds('k', value, 't')).toBe(true)
    expect(cache.holds('k', { v: 1 }, 't')).toBe(false)
    expect(cache.holds('k', value, null)).toBe(false)
    cache.forget('k')
    expect(cache.holds('k', value, 't')).toBe(false)
  })
})
