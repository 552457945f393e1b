import type { Principal } from '../../src/domain/use-cases.ts'
import { answerMemo } from '../../src/http/answer-memo.ts'
import { cachedViews } from '../../src/store/view-cache.ts'

/** The answer memo's rules over a real views cache (integration: view-cache.test.ts). */
describe('answerMemo', () => {
  let now = 0
  let lost: () => void = () => {}
  const views = () =>
    cachedViews({ maxAgeMs: 10_000, now: () => now, onLost: (listener) => void (lost = listener) })
  const principal = (token: string | null, credentialId = 'cred-1'): Principal =>
    ({ accountId: 'acct', credentialId, viewToken: token }) as Principal
  const read = (
    cache: ReturnType<typeof views>,
    token: string,
    key: string,
    value: object,
    validUntil?: number,
  ) =>
    cache.read('acct', token, key, async () => (validUntil === undefined ? { value } : { value, validUntil }))
  const made = (answer: string) => () => ({ answer, size: answer.length })
  beforeEach(() => {
    now = 1_000
  })

  it('when an answer is made of views the cache holds, then the same request gets it while they are held', async () => {
    const cache = views()
    const memo = answerMemo<string>(cache)
    const quota = await read(cache, 't1', 'quota', { used: 1 })
    const page = await read(cache, 't1', 'page', { ids: [1] })

    expect(memo.keep(principal('t1'), 'batch', [quota, page], made('A'))).toBe('A')
    expect(memo.get(principal('t1'), 'batch')).toMatchObject({ answer: 'A', points: 2 })
    // What to spend ahead, before authentication: by credential and request, whatever the token.
    expect([
      memo.pointsOf('cred-1', 'batch'),
      memo.pointsOf('cred-2', 'batch'),
      memo.pointsOf('cred-1', 'x'),
    ]).toEqual([2, 0, 0])
    // Another request, another credential, or another token: nothing.
    expect(memo.get(principal('t1'), 'other')).toBeUndefined()
    expect(memo.get(principal('t1', 'cred-2'), 'batch')).toBeUndefined()
    expect(memo.get(principal('t2'), 'batch')).toBeUndefined()
    // Once a later token was seen, the answer is gone for good (its views are read again).
    expect(memo.get(principal('t1'), 'batch')).toBeUndefined()
    expect(memo.pointsOf('cred-1', 'batch')).toBe(0)
  })

  it('when one of its views is read again (a new value), then the answer is not used', async () => {
    const cache = views()
    const memo = answerMemo<string>(cache)
    const quota = await read(cache, 't1', 'quota', { used: 1 })
    memo.keep(principal('t1'), 'batch', [quota], made('A'))
    // The view reread under a new token and back: the kept value is no longer the cache's.
    await read(cache, 't2', 'quota', { used: 2 })
    await read(cache, 't1', 'quota', { used: 3 })
    expect(memo.get(principal('t1'), 'batch')).toBeUndefined()
  })

  it('when a view turns with the clock, grows too old, or kv was lost, then the answer is not used', async () => {
    const cache = views()
    const memo = answerMemo<string>(cache)
    const page = await read(cache, 't', 'page', { status: 'active' }, 1_500)
    const quota = await read(cache, 't', 'quota', { used: 1 })
    memo.keep(principal('t'), 'page', [page], made('P'))
    memo.keep(principal('t'), 'quota', [quota], made('Q'))
    now = 1_499
    expect(memo.get(principal('t'), 'page')?.answer).toBe('P')
    now = 1_500
    expect(memo.get(principal('t'), 'page')).toBeUndefined()
    expect(memo.get(principal('t'), 'quota')?.answer).toBe('Q')
    now = 11_000
    expect(memo.get(principal('t'), 'quota')).toBeUndefined()

    now = 20_000
    const again = await read(cache, 't', 'quota', { used: 1 })
    memo.keep(principal('t'), 'quota', [again], made('Q'))
    lost()
    expect(memo.get(principal('t'), 'quota')).toBeUndefined()
  })

  it('when a value is not the cache’s, or there is no token, then nothing is kept and nothing is made', async () => {
    const cache = views()
    const memo = answerMemo<string>(cache)
    const quota = await read(cache, 't', 'quota', { used: 1 })
    let calls = 0
    const counted = () => {
      calls++
      return { answer: 'X', size: 1 }
    }
    expect(memo.keep(principal('t'), 'a', [quota, { used: 1 }], counted)).toBeUndefined()
    expect(memo.keep(principal(null), 'b', [quota], counted)).toBeUndefined()
    expect(memo.keep(principal('t'), 'c', [], counted)).toBeUndefined()
    expect(memo.keep(principal('t'), 'd', [undefined], counted)).toBeUndefined()
    expect(calls).toBe(0)
    expect(memo.get(principal('t'), 'a')).toBeUndefined()
    // A views cache that keeps nothing (the memory kv) holds nothing either.
    const none = answerMemo<string>({
      read: async (_a, _t, _k, load) => (await load()).value,
      holds: () => false,
    })
    expect(none.keep(principal('t'), 'a', [quota], counted)).toBeUndefined()
  })

  it('when answers pass the byte budget, then the least recently used go first, and one too large is not kept', async () => {
    const cache = views()
    const memo = answerMemo<string>(cache, { maxBytes: 16 * 1024, now: () => now })
    const quota = await read(cache, 't', 'quota', { used: 1 })
    const answer = 'x'.repeat(400)
    for (const request of ['r1', 'r2', 'r3', 'r4']) memo.keep(principal('t'), request, [quota], made(answer))
    // About 484 bytes each with the key and its view: 33 fit. r1, used a second later, is no
    // longer the oldest (a use within the second does not move it).
    now += 1_000
    expect(memo.get(principal('t'), 'r1')?.answer).toBe(answer)
    for (let i = 5; i <= 36; i++) memo.keep(principal('t'), `r${i}`, [quota], made(answer))
    for (const gone of ['r2', 'r3', 'r4']) expect(memo.get(principal('t'), gone)).toBeUndefined()
    for (const kept of ['r1', 'r5', 'r36']) expect(memo.get(principal('t'), kept)?.answer).toBe(answer)

    const large = 'y'.repeat(1100)
    expect(memo.keep(principal('t'), 'large', [quota], made(large))).toBe(large)
    expect(memo.get(principal('t'), 'large')).toBeUndefined()
  })
})
