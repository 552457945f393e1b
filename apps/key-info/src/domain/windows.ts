/**
 * The usage windows of key-info's README (`*_daily`, `*_weekly`, `*_monthly`): UTC day; week from Monday 00:00 UTC; UTC calendar month.
 * Days are `YYYY-MM-DD` strings, the key of the per-key daily rollups.
 */
export interface UsageWindows {
  readonly today: string
  readonly weekStart: string
  readonly monthStart: string
  /** The earliest day any window needs: the read touches rollups from here to today only. */
  readonly from: string
}

export function utcDay(t: Date): string {
  return t.toISOString().slice(0, 10)
}

const DAY_MS = 86_400_000
/** The windows of the last day asked for: every read of a key asks, and the day rarely changes. */
let last: { dayNumber: number; windows: UsageWindows } | undefined

export function usageWindows(now: Date): UsageWindows {
  const dayNumber = Math.floor(now.getTime() / DAY_MS)
  if (last?.dayNumber === dayNumber) return last.windows
  const day = new Date(dayNumber * DAY_MS)
  const sinceMonday = (day.getUTCDay() + 6) % 7
  const week = new Date(day.getTime() - sinceMonday * DAY_MS)
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  const weekStart = utcDay(week)
  const monthStart = utcDay(month)
  const windows = Object.freeze({
    today: utcDay(day),
    weekStart,
    monthStart,
    from: weekStart < monthStart ? weekStart : monthStart,
  })
  last = { dayNumber, windows }
  return windows
}

/** Milliseconds from `now` until the end of UTC day `day` (negative once it has passed). */
export function msUntilEndOfDay(day: string, now: Date): number {
  return Date.parse(`${day}T00:00:00.000Z`) + 86_400_000 - now.getTime()
}
