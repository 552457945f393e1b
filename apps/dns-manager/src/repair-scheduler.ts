import type { Logger } from '@quartet/core/log'

/**
 * Runs the repair job soon after an upstream call's outcome was unknown (and again every few
 * seconds while RRsets are still marked), rather than waiting for the next periodic run. One run
 * at a time per process; other replicas' runs are safe too (each re-asserts the database's state).
 */
export function createRepairScheduler(options: {
  run: () => Promise<{ pending: number }>
  logger: Logger
  /** First run after a kick. */
  delayMs?: number
  /** While marks remain, runs this often, at most `maxRuns` times; the periodic job does the rest. */
  retryMs?: number
  maxRuns?: number
}) {
  const delayMs = options.delayMs ?? 1000
  const retryMs = options.retryMs ?? 3000
  const maxRuns = options.maxRuns ?? 40
  let timer: NodeJS.Timeout | null = null
  let running = false
  let runs = 0
  let stopped = false

  function schedule(ms: number) {
    if (stopped || timer) return
    timer = setTimeout(() => {
      timer = null
      void tick()
    }, ms)
    timer.unref()
  }

  async function tick() {
    if (running) return schedule(retryMs)
    running = true
    try {
      const { pending } = await options.run()
      runs++
      if (pending > 0 && runs < maxRuns) schedule(retryMs)
    } catch (err) {
      options.logger.warn({ err }, 'repair job failed; retrying')
      runs++
      if (runs < maxRuns) schedule(retryMs)
    } finally {
      running = false
    }
  }

  return {
    kick() {
      runs = 0
      schedule(delayMs)
    },
    stop() {
      stopped = true
      if (timer) clearTimeout(timer)
    },
  }
}
