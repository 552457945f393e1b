/** Time as a dependency, so tests can stand on a window boundary (Sunday 23:59:59.999 UTC …). */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

/** A clock tests move by hand. */
export function fixedClock(
  start: Date | string,
): Clock & { set(t: Date | string): void; advance(ms: number): void } {
  let current = new Date(start)
  return {
    now: () => new Date(current),
    set: (t) => {
      current = new Date(t)
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms)
    },
  }
}

/**
 * A deadline that fires `ms` after now, once the event loop has also read what arrived meanwhile:
 * when the timer is due, `onLate` waits for the loop's next check phase (setImmediate), which
 * comes after its poll phase has read the sockets. A process that was busy (a long GC, a starved
 * CPU) past the deadline sees its timers before its sockets, and would otherwise fail an answer
 * that is already there. Unref'd: it keeps no process alive. Cancel with clearTimeout.
 */
export function lateDeadline(ms: number, onLate: () => void): NodeJS.Timeout {
  const timer = setTimeout(() => setImmediate(onLate), ms)
  timer.unref()
  return timer
}
