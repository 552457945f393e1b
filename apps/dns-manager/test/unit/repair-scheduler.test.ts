import { silentLogger } from '@quartet/core/testing'
import { createRepairScheduler } from '../../src/repair-scheduler.ts'

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('the repair scheduler', () => {
  it('when kicked, then the repair job runs soon, again while marks remain, and stops when none are left', async () => {
    const pending = [2, 1, 0]
    let runs = 0
    const scheduler = createRepairScheduler({
      run: async () => ({ pending: pending[runs++] ?? 0 }),
      logger: silentLogger(),
      delayMs: 10,
      retryMs: 10,
    })
    scheduler.kick()
    scheduler.kick() // a second kick while one is scheduled does not add a run
    await wait(1000)
    expect(runs).toBe(3)
    scheduler.stop()
  })

  it('when the job fails, then it is retried, at most maxRuns times; stop() cancels what is scheduled', async () => {
    let runs = 0
    const scheduler = createRepairScheduler({
      run: async () => {
        runs++
        throw new Error('upstream down')
      },
      logger: silentLogger(),
      delayMs: 5,
      retryMs: 5,
      maxRuns: 4,
    })
    scheduler.kick()
    await wait(1000)
    expect(runs).toBe(4)
    scheduler.kick()
    scheduler.stop()
    await wait(50)
    expect(runs).toBe(4)
  })
})
