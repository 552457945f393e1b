import { systemClock } from '@quartet/core/clock'
import { MemoryKeyValueStore } from '@quartet/core/kv'
import { createLogger } from '@quartet/core/log'
import { GuessGuard } from '../../src/domain/guess-guard.ts'
import { ZSettings } from '../../src/domain/settings.ts'
import { WindowCounters } from '../../src/domain/window-counters.ts'

const settings = ZSettings.parse({ takeFailuresPerIp: 10 })

describe('GuessGuard', () => {
  it('when 15 right codes from one address are checked at once, round after round, then all go through in turn and the address is never locked out', async () => {
    const counters = new WindowCounters(new MemoryKeyValueStore())
    const guard = new GuessGuard(counters, systemClock, createLogger({ name: 'test', level: 'silent' }))
    try {
      for (let round = 0; round < 4; round++) {
        // Each lookup takes 50 ms; at most ten are in flight, the others wait for one to end.
        let inFlight = 0
        let most = 0
        const answers = await Promise.allSettled(
          Array.from({ length: 15 }, async () => {
            const ticket = await guard.admit('198.51.100.7', settings)
            most = Math.max(most, ++inFlight)
            await new Promise((resolve) => setTimeout(resolve, 50))
            inFlight--
            await guard.succeeded(ticket) // right code (or a lookup that failed with 503)
          }),
        )
        expect([round, answers.filter((a) => a.status === 'fulfilled').length]).toEqual([round, 15])
        expect(most).toBe(10)
      }
      const next = await guard.admit('198.51.100.7', settings)
      expect(next.addressHit.count).toBe(1)
    } finally {
      await counters.close()
    }
  })

  it('when lookups stay slow past the wait, then the checks beyond the budget get 503 with Retry-After, not 429, and spend nothing', async () => {
    const counters = new WindowCounters(new MemoryKeyValueStore())
    const guard = new GuessGuard(counters, systemClock, createLogger({ name: 'test', level: 'silent' }))
    try {
      const held = await Promise.all(Array.from({ length: 10 }, () => guard.admit('198.51.100.6', settings)))
      const started = performance.now()
      const err = await guard.admit('198.51.100.6', settings).catch((e: unknown) => e)
      expect(performance.now() - started).toBeGreaterThan(1000)
      expect(err).toMatchObject({ code: 'service_unavailable', status: 503 })
      await Promise.all(held.map((ticket) => guard.succeeded(ticket)))
      expect((await guard.admit('198.51.100.6', settings)).addressHit.count).toBe(1)
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
