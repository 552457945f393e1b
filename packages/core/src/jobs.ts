import type { Logger } from './log.ts'

export interface PeriodicJob {
  stop(): void
}

/**
 * Runs `run` every `intervalMs` in the background (sweepers, reconcilers): never two runs at once,
 * a failure is logged and the next tick tries again, and the timer never keeps the process alive.
 * An interval of 0 or less disables the job.
 */
export function startPeriodicJob(options: {
  name: string
  intervalMs: number
  logger: Logger
  run: () => Promise<unknown>
}): PeriodicJob {
  if (options.intervalMs <= 0) return { stop() {} }
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    options
      .run()
      .catch((err: unknown) => options.logger.error({ err, job: options.name }, 'background job failed'))
      .finally(() => {
        running = false
      })
  }, options.intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
