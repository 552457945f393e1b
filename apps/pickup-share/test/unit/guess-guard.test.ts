import { systemClock } from '@quartet/core/clock'
import { MemoryKeyValueStore } from '@quartet/core/kv'
import { createLogger } from '@quartet/core/log'
import { GuessGuard, type GuessTicket } from '../../src/domain/guess-guard.ts'
import { ZSettings } from '../../src/domain/settings.ts'
import { WindowCounters } from '../../src/domain/window-counters.ts'

const settings = ZSettings.parse({ takeFailuresPerIp: 10 })

describe('GuessGuard', () => {
  it('when 15 right codes from one address are checked at once, round after round (a slow lookup), then each round 10 go through and the address is never locked out', async () => {
    const counters = new WindowCounters(new MemoryKeyValueStore())
    const guard = new GuessGuard(counters, systemClock, createLogger({ name: 'test', level: 'silent' }))
    try {
      for (let round = 0; round < 4; round++) {
        // All admitted before any lookup ends: the checks ahead are in flight together.
        const answers = await Promise.allSettled(
          Array.from({ length: 15 }, () => guard.admit('198.51.100.7', settings)),
        )
        const admitted = answers.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []))
        expect([round, admitted.length]).toEqual([round, 10])
        // Each code was right (or its lookup failed with 503): nothing spent.
        await Promise.all(admitted.map((ticket: GuessTicket) => guard.succeeded(ticket)))
      }
      const next = await guard.admit('198.51.100.7', settings)
      expect(next.addressHit.count).toBe(1)
    } finally {
      await counters.close()
    }
  })

  it('when an address has spent its budget on wrong codes, then it stays refused, right code or not, and the refusals spend nothing more', async () => {
    const counters = new WindowCounters(new MemoryKeyValueStore())
    const guard = new GuessGuard(counters, systemClock, createLogger({ name: 'test', level: 'silent' }))
    try {
      for (let i = 0; i < 10; i++) guard.failed(await guard.admit('198.51.100.8', settings))
      for (let i = 0; i < 5; i++)
        await expect(guard.admit('198.51.100.8', settings)).rejects.toMatchObject({
          code: 'rate_limit_exceeded',
        })
      // Ten failures, not fifteen: everyone's budget was not charged for the refusals either.
      const other = await guard.admit('198.51.100.9', settings)
      expect(other.globalHit.count).toBe(11)
    } finally {
      await counters.close()
    }
  })
})
