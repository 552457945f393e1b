/**
 * Money is integer micro-USD (1 USD = 1 000 000 µUSD) everywhere below the edge, held in bigint,
 * so sums are exact. The wire carries USD as JSON numbers.
 */
export const MICROS_PER_USD = 1_000_000

/** The largest single amount (or limit) accepted, in USD. */
export const MAX_AMOUNT_USD = 1_000_000_000

/**
 * The most a key's all-time usage (and, apart, its BYOK usage) may reach, in USD: 10^18 µUSD,
 * inside Postgres' BIGINT (2^63 − 1 ≈ 9.2 × 10^18) with room to spare, and so every daily,
 * weekly and monthly sum below it. A batch that would pass it is refused whole.
 */
export const MAX_KEY_TOTAL_USD = 1_000_000_000_000
export const MAX_KEY_TOTAL_MICROS = BigInt(MAX_KEY_TOTAL_USD) * BigInt(MICROS_PER_USD)

/**
 * USD → µUSD, or null when `usd` is not a finite number ≥ 0 with at most 6 decimal places
 * (more would be silently rounded, which an exact ledger must not do).
 */
export function usdToMicros(usd: number): bigint | null {
  if (typeof usd !== 'number' || !Number.isFinite(usd) || usd < 0 || usd > MAX_AMOUNT_USD) return null
  const micros = Math.round(usd * MICROS_PER_USD)
  // A 6-decimal value round-trips exactly (the division is correctly rounded to the nearest double).
  if (micros / MICROS_PER_USD !== usd) return null
  return BigInt(micros)
}

/** Decimal text (`"0.25"`, `"3"`) → µUSD, for the CLI; null when it is not a plain non-negative decimal. */
export function parseUsd(text: string): bigint | null {
  const match = /^(\d{1,10})(?:\.(\d{1,6}))?$/.exec(text.trim())
  if (!match) return null
  const micros = BigInt(match[1]!) * BigInt(MICROS_PER_USD) + BigInt((match[2] ?? '').padEnd(6, '0'))
  return micros > BigInt(MAX_AMOUNT_USD) * BigInt(MICROS_PER_USD) ? null : micros
}

/** µUSD → a JSON number of USD. Exact integer division, then one correctly rounded step to a double. */
export function microsToUsd(micros: bigint): number {
  const whole = micros / BigInt(MICROS_PER_USD)
  const frac = micros % BigInt(MICROS_PER_USD)
  return Number(`${whole}.${frac.toString().padStart(6, '0')}`)
}
