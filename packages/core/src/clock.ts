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
