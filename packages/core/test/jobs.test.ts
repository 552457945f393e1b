import { startPeriodicJob } from '../src/jobs.ts'
import { captureLogger } from '../src/testing.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Waits until `done()` holds (or 5 s pass): a busy machine delays timers, it does not skip them. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000
  while (!done() && Date.now() < deadline) await sleep(5)
}

describe('startPeriodicJob', () => {
  it('when a run takes longer than the interval, then runs never overlap', async () => {
    let active = 0
    let maxActive = 0
    let runs = 0
    const job = startPeriodicJob({
      name: 'slow',
      intervalMs: 10,
      logger: captureLogger().logger,
      run: async () => {
        active++
        runs++
        maxActive = Math.max(maxActive, active)
        await sleep(35)
        active--
      },
    })
    await until(() => runs >= 4)
    job.stop()
    expect(runs).toBeGreaterThanOrEqual(4)
    expect(maxActive).toBe(1)
  })

  it('when a run fails, then it is logged with the job name and the next tick runs again', async () => {
    const { logger, lines } = captureLogger()
    let runs = 0
    const job = startPeriodicJob({
      name: 'flaky',
      intervalMs: 10,
      logger,
      run: async () => {
        runs++
        throw new Error('boom')
      },
    })
    await until(() => runs >= 2)
    job.stop()
    expect(runs).toBeGreaterThanOrEqual(2)
    expect(lines.some((l) => l.job === 'flaky' && l.msg === 'background job failed')).toBe(true)
  })

  it('when the interval is 0, then the job never runs', async () => {
    let runs = 0
    startPeriodicJob({
      name: 'off',
      intervalMs: 0,
      logger: captureLogger().logger,
      run: async () => void runs++,
    })
    await sleep(30)
    expect(runs).toBe(0)
  })
})
