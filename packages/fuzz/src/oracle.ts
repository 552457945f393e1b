import type { ServiceName } from '@quartet/faults/service-process'
import type { WireOutcome, WireResponse } from './wire.ts'

/** Where an answer comes from, which decides the envelope it must be in. */
export type Style = 'status' | 'code' | 'rest' | 'rpc' | 'graphql'

/**
 * The envelopes an answer may be in, by where it comes from: each service has its own, and
 * dns-manager one per call style. A POST to the JSON-RPC endpoint itself must answer JSON-RPC,
 * and anything under the GraphQL endpoints GraphQL; what only looks like them (`GET /rpc`,
 * `/rpc/x`) is an unknown route, in the REST envelope or the style's own.
 */
export function stylesOf(service: ServiceName, method: string, target: string): Style[] {
  switch (service) {
    case 'key-info':
      return ['status']
    case 'design-archive':
    case 'pickup-share':
      return ['code']
    case 'dns-manager': {
      // The path as express routes it: absolute-form's scheme and host dropped, case ignored.
      const p = target
        .replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '')
        .split(/[?#]/)[0]!
        .toLowerCase()
      if (/^\/(api\/v1\/)?rpc\/?$/.test(p) && method === 'POST') return ['rpc']
      if (/^\/(api\/v1\/)?graphql(\/|$)/.test(p)) return ['graphql']
      if (/rpc|graphql/.test(p)) return ['rest', 'rpc', 'graphql']
      return ['rest']
    }
  }
}

/**
 * What node's HTTP parser refuses (a request line or headers over its limit, a byte it does not
 * take) is answered before any request, and so any route, exists: in the service's own
 * envelope (dns-manager: REST's). Such answers carry a request id of their own (issue 48) but
 * none of the security headers every answer of the pipeline has (X-Content-Type-Options).
 */
const connectionStyle: Record<ServiceName, Style> = {
  'design-archive': 'code',
  'key-info': 'status',
  'dns-manager': 'rest',
  'pickup-share': 'code',
}

export function acceptedStyles(
  service: ServiceName,
  method: string,
  target: string,
  res: WireOutcome,
): Style[] {
  const styles = stylesOf(service, method, target)
  if (
    res.ok &&
    res.response.headers['x-content-type-options'] === undefined &&
    !styles.includes(connectionStyle[service])
  )
    return [...styles, connectionStyle[service]]
  return styles
}

const ERROR_CODE = /^[a-z][a-z0-9_]*$/

/**
 * What is wrong with an answer, or null: a 5xx, a connection that failed (reset, hang, closed
 * before the answer), or an error outside every envelope the route may answer in.
 */
export function judge(outcome: WireOutcome, styles: readonly Style[], method: string): string | null {
  if (!outcome.ok) {
    const f = outcome.failure
    return `connection ${f.kind}: ${f.detail}${f.partial ? ` (after status ${f.partial.status})` : ''}`
  }
  const res = outcome.response
  if (res.status >= 500) return `status ${res.status}`
  if (method === 'HEAD' || res.status < 400) {
    const embedded = styles.find((s) => s === 'rpc' || s === 'graphql')
    return embedded && styles.length === 1 ? embeddedErrors(res, embedded) : null
  }
  let first: string | null = null
  for (const style of styles) {
    const problem = envelopeProblem(res, style)
    if (!problem) return null
    first ??= problem
  }
  return first
}

function parse(res: WireResponse): { value?: unknown; problem?: string } {
  const type = res.headers['content-type'] ?? ''
  if (!/^application\/(graphql-response\+)?json\b/i.test(type))
    return { problem: `an error answered as ${JSON.stringify(type)}, not JSON: ${preview(res)}` }
  try {
    return { value: JSON.parse(res.body.toString('utf8')) }
  } catch {
    return { problem: `an error body that is not JSON: ${preview(res)}` }
  }
}

const preview = (res: WireResponse) => JSON.stringify(res.body.subarray(0, 300).toString('utf8'))
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

function envelopeProblem(res: WireResponse, style: Style): string | null {
  const { value, problem } = parse(res)
  if (problem) return problem
  const body = value as Record<string, unknown>
  const bad = (why: string) => `status ${res.status} outside the ${style} envelope (${why}): ${preview(res)}`
  switch (style) {
    case 'status': {
      const error = isObject(body) ? body.error : undefined
      if (!isObject(error)) return bad('no error object')
      if (error.code !== res.status) return bad(`error.code ${JSON.stringify(error.code)} is not the status`)
      if (typeof error.message !== 'string' || !error.message) return bad('no error.message')
      return null
    }
    case 'code': {
      const error = isObject(body) ? body.error : undefined
      if (!isObject(error)) return bad('no error object')
      if (typeof error.code !== 'string' || !ERROR_CODE.test(error.code))
        return bad('error.code is not a code')
      if (typeof error.message !== 'string' || !error.message) return bad('no error.message')
      return null
    }
    case 'rest': {
      if (!isObject(body) || body.success !== false) return bad('success is not false')
      const error = body.error
      if (!isObject(error)) return bad('no error object')
      if (typeof error.code !== 'string' || !ERROR_CODE.test(error.code))
        return bad('error.code is not a code')
      if (typeof error.message !== 'string' || !error.message) return bad('no error.message')
      return null
    }
    case 'rpc': {
      const entries = Array.isArray(body) ? body : [body]
      if (!entries.length) return bad('an empty batch answer')
      for (const entry of entries) {
        const why = rpcErrorProblem(entry)
        if (why) return bad(why)
      }
      return null
    }
    case 'graphql': {
      const why = graphqlErrorsProblem(body, true)
      return why ? bad(why) : null
    }
  }
}

function rpcErrorProblem(entry: unknown): string | null {
  if (!isObject(entry) || entry.jsonrpc !== '2.0') return 'not a JSON-RPC 2.0 answer'
  if (!('id' in entry)) return 'no id'
  if (!('error' in entry)) return 'result' in entry ? null : 'neither result nor error'
  const error = entry.error
  if (!isObject(error) || !Number.isInteger(error.code) || typeof error.message !== 'string')
    return 'error is not {code, message}'
  const data = error.data
  if (!isObject(data) || typeof data.error_code !== 'string' || !ERROR_CODE.test(data.error_code))
    return 'error.data.error_code missing'
  return null
}

function graphqlErrorsProblem(body: unknown, required: boolean): string | null {
  if (!isObject(body)) return 'not an object'
  const errors = body.errors
  if (errors === undefined) return required ? 'no errors' : null
  if (!Array.isArray(errors) || !errors.length) return 'errors is not a non-empty list'
  for (const e of errors) {
    if (!isObject(e) || typeof e.message !== 'string') return 'an error without message'
    const ext = e.extensions
    if (!isObject(ext) || typeof ext.code !== 'string' || !ERROR_CODE.test(ext.code))
      return `an error without extensions.code of ours (${JSON.stringify(isObject(ext) ? ext.code : null)})`
    if (ext.code === 'internal_error') return 'internal_error'
  }
  return null
}

/** A 2xx JSON-RPC or GraphQL answer may still carry errors: each must be in the envelope too. */
function embeddedErrors(res: WireResponse, style: Style): string | null {
  if (res.body.length === 0) return null
  if (!/json/i.test(res.headers['content-type'] ?? '')) return null
  let body: unknown
  try {
    body = JSON.parse(res.body.toString('utf8'))
  } catch {
    return `status ${res.status} with a body that is not JSON: ${preview(res)}`
  }
  if (style === 'graphql') {
    const why = graphqlErrorsProblem(body, false)
    return why ? `status ${res.status} GraphQL answer: ${why}: ${preview(res)}` : null
  }
  for (const entry of Array.isArray(body) ? body : [body]) {
    const why = rpcErrorProblem(entry)
    if (why) return `status ${res.status} JSON-RPC answer: ${why}: ${preview(res)}`
    if (isObject(entry) && isObject(entry.error) && entry.error.code === -32603)
      return `status ${res.status} JSON-RPC internal error: ${preview(res)}`
  }
  return null
}
