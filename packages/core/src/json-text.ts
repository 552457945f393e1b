/**
 * JSON text kept with values that never change again: a cached answer shared by many requests
 * is serialised once, when it is cached, and each answer that carries it splices that text in
 * instead of serialising the same rows again (dns-manager's account views).
 */
const texts = new WeakMap<object, string>()

/**
 * Freezes `value` all the way down (so no request can change what the next one is answered
 * with) and keeps its JSON text, which `jsonTextOf` then returns. Returns `value`.
 */
export function freezeWithJsonText<T extends object>(value: T): T {
  deepFreeze(value)
  texts.set(value, JSON.stringify(value))
  return value
}

/** The JSON text `freezeWithJsonText` kept for this very value, or undefined. */
export function jsonTextOf(value: unknown): string | undefined {
  return typeof value === 'object' && value !== null ? texts.get(value) : undefined
}

/**
 * `JSON.stringify({ ...head, ...value })` for a plain object `value` with no key of `head`'s,
 * using the text kept for `value` when there is one. `head` is serialised each time.
 */
export function jsonWithHead(head: Record<string, unknown>, value: object): string {
  const text = jsonTextOf(value)
  if (text === undefined) return JSON.stringify({ ...head, ...value })
  const first = JSON.stringify(head)
  if (text === '{}') return first
  if (first === '{}') return text
  return `${first.slice(0, -1)},${text.slice(1)}`
}

function deepFreeze(value: object): void {
  Object.freeze(value)
  for (const inner of Object.values(value))
    if (typeof inner === 'object' && inner !== null) deepFreeze(inner as object)
}
