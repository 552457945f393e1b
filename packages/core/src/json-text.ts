/**
 * JSON kept with values that never change again: a cached answer shared by many requests is
 * serialised and encoded once, when it is cached, and each answer that carries it splices those
 * bytes in instead of serialising (and UTF-8 encoding) the same rows again (dns-manager's
 * account views).
 */
const kept = new WeakMap<object, Buffer>()

/**
 * Freezes `value` all the way down (so no request can change what the next one is answered
 * with) and keeps its JSON as UTF-8 bytes, which `jsonBytesOf` then returns. Returns `value`.
 */
export function freezeWithJson<T extends object>(value: T): T {
  deepFreeze(value)
  kept.set(value, Buffer.from(JSON.stringify(value)))
  return value
}

/** The JSON bytes `freezeWithJson` kept for this very value, or undefined. */
export function jsonBytesOf(value: unknown): Buffer | undefined {
  return typeof value === 'object' && value !== null ? kept.get(value) : undefined
}

/**
 * The bytes of `JSON.stringify({ ...head, ...value })` for a plain object `value` with no key of
 * `head`'s, splicing in what was kept for `value` when there is something. `head` is serialised
 * each time.
 */
export function jsonWithHead(head: Record<string, unknown>, value: object): Buffer {
  const bytes = jsonBytesOf(value)
  if (bytes === undefined) return Buffer.from(JSON.stringify({ ...head, ...value }))
  const first = JSON.stringify(head)
  if (bytes.length === 2) return Buffer.from(first) // {}
  if (first === '{}') return bytes
  return Buffer.concat([Buffer.from(`${first.slice(0, -1)},`), bytes.subarray(1)])
}

/**
 * `{ ...head, ...value }` for a plain object `value` with no key of `head`'s. When `value` kept
 * its JSON, the result is frozen and keeps the bytes jsonWithHead splices for it, so an answer
 * made of a cached value is sent without serialising the value again (a hot route's reply);
 * serialised by JSON.stringify (res.json), it gives the same bytes.
 */
export function withHead<H extends Record<string, unknown>, V extends object>(head: H, value: V): H & V {
  const joined = { ...head, ...value }
  if (jsonBytesOf(value) === undefined) return joined
  kept.set(Object.freeze(joined), jsonWithHead(head, value))
  return joined
}

function deepFreeze(value: object): void {
  Object.freeze(value)
  for (const inner of Object.values(value))
    if (typeof inner === 'object' && inner !== null) deepFreeze(inner as object)
}
