import type { RequestHandler } from 'express'
import { lateDeadline } from '../clock.ts'
import { isDraining } from './app-state.ts'

/**
 * A named dependency probe for `/readyz`; it resolves when the dependency answers. A check the
 * service can serve without (Redis, where limits fall back to each process) is `optional`: it is
 * reported, and never takes the service out of the load balancer. `progress()` is called as the
 * check begins; the function it returns says, once the check is past its deadline, whether the
 * dependency has since answered other work sent after that moment. Then the check is `slow`, and
 * passes: a busy server keeps answering, a dead or frozen one answers nothing sent after it stopped
 * (db.ts databaseReadiness), so one slow ping under load does not take a replica out.
 */
export type ReadinessCheck =
  | (() => Promise<unknown>)
  | { check: () => Promise<unknown>; optional?: true; progress?: () => () => boolean }

export function readinessHandler(checks: Record<string, ReadinessCheck>, timeoutMs: number): RequestHandler {
  const entries = Object.entries(checks).map(([name, entry]) =>
    typeof entry === 'function'
      ? { name, check: entry, optional: false, progress: undefined }
      : { name, check: entry.check, optional: entry.optional === true, progress: entry.progress },
  )
  return async (req, res) => {
    res.set('Cache-Control', 'no-store')
    // Shutting down: out of the load balancer before anything else happens (serve sets this).
    if (isDraining(req.app)) {
      res.status(503).json({ status: 'shutting_down', checks: {} })
      return
    }
    // `?scope=process`: whether this process takes requests at all, dependencies not asked. For
    // a proxy balancing replicas: it should leave out a replica that drains, not every replica
    // while a dependency is down (each then answers its own 503 with Retry-After).
    if (req.query.scope === 'process') {
      res.json({ status: 'ok', checks: {} })
      return
    }
    const results = await Promise.all(
      entries.map(async ({ name, check, optional, progress }) => {
        const answeredSince = progress?.()
        try {
          await withTimeout(Promise.resolve().then(check), timeoutMs)
          return { name, optional, state: 'ok' }
        } catch (err) {
          // A ping past its deadline while the dependency answered other work sent after the
          // check began is a busy server, not a dead or frozen one: `slow`, and it passes.
          if (err instanceof TimeoutError && answeredSince?.()) return { name, optional, state: 'slow' }
          req.log?.warn({ check: name, err }, 'readiness check failed')
          return { name, optional, state: err instanceof TimeoutError ? 'timeout' : 'unreachable' }
        }
      }),
    )
    const passing = (state: string) => state === 'ok' || state === 'slow'
    const failing = results.filter((r) => !passing(r.state) && !r.optional).map((r) => r.name)
    const degraded = results.filter((r) => !passing(r.state) && r.optional).map((r) => r.name)
    res.status(failing.length === 0 ? 200 : 503).json({
      status: failing.length ? 'unavailable' : degraded.length ? 'degraded' : 'ok',
      checks: Object.fromEntries(results.map((r) => [r.name, r.state])),
      ...(failing.length ? { failing } : {}),
      ...(degraded.length ? { degraded } : {}),
    })
  }
}

class TimeoutError extends Error {}

/**
 * The check's deadline is judged after the event loop has read its sockets (lateDeadline): a
 * process busy past it (a long GC, a CPU shared with other work) would otherwise call a ping late
 * whose answer was already there, and readiness would flap with the process's own load.
 */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = lateDeadline(ms, () => reject(new TimeoutError(`timed out after ${ms} ms`)))
    }),
  ]).finally(() => clearTimeout(timer))
}
