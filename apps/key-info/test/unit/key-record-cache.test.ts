import { heldCalls } from '@quartet/core/testing'
import type { KeyStore, KeyWithUsage } from '../../src/domain/ports.ts'
import { usageWindows } from '../../src/domain/windows.ts'
import { type KeyVersions, versionedKeyStore } from '../../src/store/key-record-cache.ts'

/**
 * The key record cache's reads in flight (the tokens' own rules, across two replicas:
 * key-cache.test.ts in integration).
 */
describe('versionedKeyStore, reads in flight', () => {
  let now = 0
  let reads = 0
  let failing = false
  let calls = heldCalls()
  let lost = () => {}
  const versions: KeyVersions = {
    read: async () => 't',
    start: async () => {},
    bump: async () => {},
    onLost: (listener) => (lost = listener),
  }
  /** The database: each read waits until `open()`, then gives record n (or fails). */
  const inner = {
    findWithUsage: async () => {
      const n = ++reads
      await calls.hold()
      if (failing) throw new Error('database gone')
      return { hash: 'h', label: `read ${n}` } as unknown as KeyWithUsage
    },
  } as unknown as KeyStore
  const open = () => calls.open()
  const today = usageWindows(new Date('2026-11-22T12:00:00Z'))
  const tomorrow = usageWindows(new Date('2026-11-23T12:00:00Z'))
  const token = (t: string) => ({ token: t, askedAt: performance.now() })

  /** A store that held the key's record under `t`, grown too old since. */
  async function staleUnder(t: string) {
    const keys = versionedKeyStore(inner, versions, {
      maxAgeMs: 10_000,
      now: () => now,
      onBumpFailed: () => {},
    })
    const first = keys.findWithUsage('h', today, token(t))
    open()
    await first
    await keys.findWithUsage('h', today, token(t))
    expect(reads).toBe(1)
    now += 10_000
    reads = 0
    return keys
  }

  beforeEach(() => {
    now = 1_000
    reads = 0
    failing = false
    calls = heldCalls()
  })

  it('when a cached record grows too old, then the requests that miss it at once under its token share one read', async () => {
    const keys = await staleUnder('t')

    const all = Array.from({ length: 5 }, () => keys.findWithUsage('h', today, token('t')))
    expect(reads).toBe(1)
    open()
    const found = await Promise.all(all)

    expect(found.every((f) => f === found[0])).toBe(true)
    await keys.findWithUsage('h', today, token('t'))
    expect(reads).toBe(1)
  })

  it('when the token or the day differs, kv cannot be read, or kv may have lost tokens, then a read is not joined', async () => {
    const keys = await staleUnder('t')

    const all = [
      keys.findWithUsage('h', today, token('t')),
      keys.findWithUsage('h', today, token('t2')),
      keys.findWithUsage('h', tomorrow, token('t2')),
      keys.findWithUsage('h', today, 'unreadable'),
    ]
    expect(reads).toBe(4)
    lost()
    all.push(keys.findWithUsage('h', tomorrow, token('t2')))
    expect(reads).toBe(5)
    open()
    await Promise.all(all)
  })

  it('when the read fails, then those that joined it fail, and the next request reads again', async () => {
    const keys = await staleUnder('t')
    failing = true

    const all = Array.from({ length: 3 }, () => keys.findWithUsage('h', today, token('t')))
    open()
    const settled = await Promise.allSettled(all)
    failing = false

    expect(settled.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
    expect(reads).toBe(1)
    const next = keys.findWithUsage('h', today, token('t'))
    open()
    await expect(next).resolves.toMatchObject({ label: 'read 2' })
  })
})
