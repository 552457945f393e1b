import type { WireRequest } from './wire.ts'

/**
 * A request before it becomes bytes: what the generators build and the mutations change.
 * Path and query pieces are already percent-encoded (or deliberately mis-encoded).
 */
export interface Draft {
  method: string
  path: string
  query: Array<[string, string | null]>
  headers: Array<[string, string]>
  body?: { json: unknown } | { raw: Buffer; note: string }
  host?: string | null
  chunked?: boolean
  /** A request-target sent instead of path + query (absolute-form, `*`, …). */
  target?: string
}

/** A named change to a draft; its name is what a failure report lists. */
export interface Mutation {
  name: string
  apply(draft: Draft): Draft
}

export const mutation = (name: string, apply: (d: Draft) => Draft): Mutation =>
  ({
    name,
    apply,
    toString: () => name,
  }) as Mutation

export function setHeader(d: Draft, name: string, value: string | undefined): Draft {
  const headers = d.headers.filter(([n]) => n.toLowerCase() !== name.toLowerCase())
  if (value !== undefined) headers.push([name, value])
  return { ...d, headers }
}

export function bodyBytes(d: Draft): Buffer | undefined {
  if (!d.body) return undefined
  if ('raw' in d.body) return d.body.raw
  return Buffer.from(JSON.stringify(d.body.json) ?? 'null', 'utf8')
}

export function toWire(d: Draft): WireRequest {
  const query = d.query.map(([k, v]) => (v === null ? k : `${k}=${v}`)).join('&')
  const body = bodyBytes(d)
  return {
    method: d.method,
    target: d.target ?? (query ? `${d.path}?${query}` : d.path),
    headers: d.headers,
    ...(body ? { body } : {}),
    ...(d.host !== undefined ? { host: d.host } : {}),
    ...(d.chunked ? { chunked: true } : {}),
  }
}

/** The request as a reader (and `curl`) can replay it: the head in full, the body shortened. */
export function describeRequest(d: Draft): string {
  const wire = toWire(d)
  const lines = [`${wire.method} ${clip(wire.target)} HTTP/1.1`]
  if (wire.host !== undefined)
    lines.push(wire.host === null ? '(no Host header)' : `Host: ${clip(wire.host)}`)
  const extra = wire.headers.filter(([n]) => /^X-Fuzz-\d+$/.test(n)).length
  for (const [n, v] of wire.headers) if (!/^X-Fuzz-\d+$/.test(n)) lines.push(`${n}: ${clip(v)}`)
  if (extra) lines.push(`(and ${extra} headers X-Fuzz-0… X-Fuzz-${extra - 1}: v)`)
  if (wire.chunked) lines.push('(body sent chunked)')
  if (wire.body) {
    const text = wire.body.toString('utf8')
    const valid = Buffer.from(text, 'utf8').equals(wire.body)
    const shown = valid ? JSON.stringify(text) : `base64:${wire.body.toString('base64')}`
    lines.push(
      `(body, ${wire.body.length} bytes${d.body && 'raw' in d.body ? `, ${d.body.note}` : ''}) ${shown.length > 600 ? `${shown.slice(0, 600)}… (${shown.length} chars)` : shown}`,
    )
  }
  return lines.join('\n')
}

/** A byte string as JSON-escaped text, long ones cut in the middle. */
function clip(s: string, max = 400): string {
  const shown = JSON.stringify(s).slice(1, -1)
  return shown.length > max
    ? `${shown.slice(0, max / 2)}…(${s.length} characters)…${shown.slice(-max / 4)}`
    : shown
}
