/**
 * The usage windows of DESIGN.md "Time": UTC day; week from Monday 00:00 UTC; UTC calendar month.
 * Days are `YYYY-MM-DD` strings, the key of the per-key daily rollups.
 */
export interface UsageWindows {
  today: string
  weekStart: string
  monthStart: string
  /** The earliest day any window needs: the read touches rollups from here to today only. */
  from: string
}

export function utcDay(t: Date): string {
  return t.toISOString().slice(0, 10)
}

export function usageWindows(now: Date): UsageWindows {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
  const sinceMonday = (day.getUTCDay() + 6) % 7
  const week = new Date(day.getTime() - sinceMonday * 86_400_000)
  const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1))
  const weekStart = utcDay(week)
  const monthStart = utcDay(month)
  return {
    today: utcDay(day),
    weekStart,
    monthStart,
    from: weekStart < monthStart ? weekStart : monthStart,
  }
}

/** Milliseconds from `now` until the end of UTC day `day` (negative once it has passed). */
export function msUntilEndOfDay(day: string, now: Date): number {
  return Date.parse(`${day}T00:00:00.000Z`) + 86_400_000 - now.getTime()
}
