import { heldCalls } from '@quartet/core/testing'
import type { CredentialWithAccount } from '../../src/domain/ports.ts'
import { cachedCredentialLookup, type PrincipalVersions } from '../../src/store/principal-cache.ts'

/**
 * The principal cache's lookups in flight (the tokens' own rules, across two replicas:
 * principal-cache.test.ts in integration).
 */
describe('cachedCredentialLookup, lookups in flight', () => {
  let now = 0
  let lookups = 0
  let failing = false
  let calls = heldCalls()
  let lost = () => {}
  const versions: PrincipalVersions = {
    keysOf: (accountId) => ['all', accountId],
    start: async () => {},
    bump: async () => {},
    bumpAll: async () => {},
    onLost: (listener) => (lost = listener),
  }
  /** The database: each lookup waits until `open()`, then finds credential n (or fails). */
  const accounts = {
    findCredential: async () => {
      const n = ++lookups
      await calls.hold()
      if (failing) throw new Error('database gone')
      return {
        credential: { id: `cred-${n}`, publicKey: 'pk' },
        account: { id: 'acct' },
      } as unknown as CredentialWithAccount
    },
    touchCredential: async () => {},
  }
  const open = () => calls.open()
  const tokens = (t: string) => ({ values: ['all-1', t], askedAt: performance.now() })
  const find = async (
    cache: ReturnType<typeof cachedCredentialLookup>,
    readAhead: Parameters<typeof cache.find>[1],
  ) => {
    const found = cache.find('pk', readAhead)
    open()
    return found
  }

  /** A cache that holds the key vouched for under `t`, grown too old since. */
  async function staleUnder(t: string) {
    const cache = cachedCredentialLookup(accounts, versions, { maxAgeMs: 10_000, now: () => now })
    await find(cache, { values: [], askedAt: performance.now() }) // not vouched for: no token yet
    await find(cache, tokens(t))
    await cache.find('pk', tokens(t))
    expect(lookups).toBe(2)
    now += 10_000
    lookups = 0
    return cache
  }

  beforeEach(() => {
    now = 1_000
    lookups = 0
    failing = false
    calls = heldCalls()
  })

  it('when a cached key grows too old, then the requests that miss it at once under its token share one lookup', async () => {
    const cache = await staleUnder('t')

    const all = Array.from({ length: 5 }, () => cache.find('pk', tokens('t')))
    expect(lookups).toBe(1)
    open()
    const found = await Promise.all(all)

    expect(found.every((f) => f === found[0])).toBe(true)
    // Kept for the next request, as a lookup of its own would have been.
    await cache.find('pk', tokens('t'))
    expect(lookups).toBe(1)
  })

  it('when the token differs, cannot be read, or kv may have lost tokens, then a lookup is not joined', async () => {
    const cache = await staleUnder('t')

    const all = [
      cache.find('pk', tokens('t')),
      cache.find('pk', tokens('t2')),
      cache.find('pk', 'unreadable'),
      cache.find('pk', 'unreadable'),
    ]
    expect(lookups).toBe(4)
    lost()
    all.push(cache.find('pk', tokens('t2')))
    expect(lookups).toBe(5)
    open()
    await Promise.all(all)
  })

  it('when the lookup fails, then those that joined it fail, and the next request looks up again', async () => {
    const cache = await staleUnder('t')
    failing = true

    const all = Array.from({ length: 3 }, () => cache.find('pk', tokens('t')))
    open()
    const settled = await Promise.allSettled(all)
    failing = false

    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(lookups).toBe(1)
    await expect(find(cache, tokens('t'))).resolves.toMatchObject({ credential: { id: 'cred-2' } })
  })
})
