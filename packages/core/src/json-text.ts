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

/**
 * The JSON bytes `freezeWithJson` kept for this very value (or, for a WithHead, its head spliced
 * in front of its value's), or undefined.
 */
export function jsonBytesOf(value: unknown): Buffer | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  if (value instanceof WithHead) return jsonWithHead(value.head, value.value)
  return kept.get(value)
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
 * `{ ...head, ...value }` as an answer's body (a plain object `value` with no key of `head`'s),
 * made only when it is serialised: JSON.stringify (express's res.json) calls toJSON, and a hot
 * route sends jsonBytesOf(it), which splices in the bytes `value` kept (jsonWithHead) instead of
 * serialising the value again. Nothing is copied or kept per request.
 */
export class WithHead<H extends Record<string, unknown>, V extends object> {
  constructor(
    readonly head: H,
    readonly value: V,
  ) {}

  toJSON(): H & V {
    return { ...this.head, ...this.value }
  }
}

export function withHead<H extends Record<string, unknown>, V extends object>(
  head: H,
  value: V,
): WithHead<H, V> {
  return new WithHead(head, value)
}

function deepFreeze(value: object): void {
  Object.freeze(value)
  for (const inner of Object.values(value))
    if (typeof inner === 'object' && inner !== null) deepFreeze(inner as object)
}
