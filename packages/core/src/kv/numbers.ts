/** The checks both key-value stores apply to what they are given and what they read back. */

export function parseCounter(value: string, key: string): number {
  const n = Number(value)
  if (!Number.isInteger(n)) throw new Error(`kv key ${key} does not hold an integer`)
  return n
}

export function integer(n: number): number {
  if (!Number.isSafeInteger(n)) throw new Error(`expected an integer, got ${n}`)
  return n
}

export function positive(ms: number): number {
  const n = Math.ceil(ms)
  if (!Number.isFinite(n) || n <= 0) throw new Error(`TTL must be a positive number of ms, got ${ms}`)
  return n
}
