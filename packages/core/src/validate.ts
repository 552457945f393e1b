import { isUtf8 } from 'node:buffer'
import type { RequestHandler } from 'express'
import type { z } from 'zod'
import { ApiError } from './errors.ts'

/**
 * Validation at the edge only: one middleware parses params, query and body with zod and
 * replaces them with the parsed values, so handlers and the domain trust their types. A failure
 * is 400 bad_request naming every offending field in `details.issues`.
 */
export interface InputSchemas {
  params?: z.ZodType
  query?: z.ZodType
  body?: z.ZodType
}

export type ParsedInput<S extends InputSchemas> = {
  params: S['params'] extends z.ZodType ? z.output<S['params']> : Record<string, string>
  query: S['query'] extends z.ZodType ? z.output<S['query']> : unknown
  body: S['body'] extends z.ZodType ? z.output<S['body']> : unknown
}

export interface ValidationIssue {
  /** Where the value came from and its path, e.g. `body.events.3.amount`. */
  field: string
  message: string
}

/**
 * The one input rule every string obeys, wherever it comes from (a JSON body, the query, a path
 * parameter, JSON-RPC params, GraphQL arguments and variables): no NUL character (Postgres text
 * cannot hold one) and no lone UTF-16 surrogate (it has no UTF-8 form). Object keys count as
 * strings too. Returns the first offender as a validation issue naming its field, or undefined.
 * Iterative, so a deeply nested value cannot exhaust the stack.
 */
export function findMalformedString(value: unknown, where: string): ValidationIssue | undefined {
  const stack: Array<[unknown, string]> = [[value, where]]
  while (stack.length) {
    const [current, path] = stack.pop()!
    if (typeof current === 'string') {
      const problem = stringProblem(current)
      if (problem) return { field: path, message: problem }
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], `${path}.${i}`])
    } else if (typeof current === 'object' && current !== null) {
      const keys = Object.keys(current)
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const problem = stringProblem(key)
        if (problem) return { field: `${path}.${printable(key)}`, message: `field name ${problem}` }
        stack.push([(current as Record<string, unknown>)[key], `${path}.${key}`])
      }
    }
  }
  return undefined
}

function stringProblem(s: string): string | undefined {
  if (s.includes('\0')) return 'must not contain NUL characters'
  if (!s.isWellFormed()) return 'must be well-formed Unicode (a lone surrogate has no UTF-8 form)'
  return undefined
}

/** A field name as it may be echoed back: without the characters that made it malformed. */
function printable(key: string): string {
  return key.replaceAll('\0', '\\0').toWellFormed()
}

/** Throws 400 bad_request naming the field when `value` holds a malformed string (findMalformedString). */
export function assertWellFormed(value: unknown, where: string): void {
  const issue = findMalformedString(value, where)
  if (issue) throw new ApiError('bad_request', `${issue.field}: ${issue.message}`, { issues: [issue] })
}

/** Parse `value` or throw 400 bad_request; usable by any adapter (REST, JSON-RPC, GraphQL, CLI). */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, where = 'input'): z.output<T> {
  assertWellFormed(value, where)
  const result = schema.safeParse(value)
  if (result.success) return result.data
  throw validationError(result.error, where, value)
}

/**
 * 400 bad_request naming every issue. `input` is the value that was parsed: zod 4 does not keep
 * the offending value in its issues, so a wrong type is told apart from a missing field by
 * looking the path up in it ("expected number, received string" rather than "is required").
 */
export function validationError(error: z.ZodError, where: string, input?: unknown): ApiError {
  const issues: ValidationIssue[] = error.issues.map((issue) => ({
    field: [where, ...issue.path.map(String)].join('.'),
    message: describeIssue(issue, input),
  }))
  const first = issues[0]
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''
  return new ApiError('bad_request', first ? `${first.field}: ${first.message}${more}` : `invalid ${where}`, {
    issues,
  })
}

function describeIssue(issue: z.core.$ZodIssue, input: unknown): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`
  if (issue.code === 'invalid_type') {
    const received = valueAt(input, issue.path)
    if (received === undefined) return 'is required'
    return `expected ${issue.expected}, received ${kindOf(received)}`
  }
  return issue.message
}

/** The value at `path` inside `input` (undefined when any step is missing). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current = input
  for (const key of path) {
    if (typeof current !== 'object' || current === null) return undefined
    if (!Object.prototype.hasOwnProperty.call(current, key)) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}

/** A JSON value's kind as a client would name it: null and array apart from object. */
function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number' && !Number.isFinite(value)) return 'NaN'
  return typeof value
}

/** The middleware. Parsed values replace `req.params`, `req.query` and `req.body`; every bad part is reported at once. */
export function validate<S extends InputSchemas>(schemas: S): RequestHandler {
  return (req, _res, next) => {
    const issues: ValidationIssue[] = []
    const parse = (schema: z.ZodType | undefined, value: unknown, where: string): unknown => {
      if (!schema) return value
      const malformed = findMalformedString(value, where)
      if (malformed) {
        issues.push(malformed)
        return value
      }
      const result = schema.safeParse(value)
      if (result.success) return result.data
      issues.push(...(validationError(result.error, where, value).details!.issues as ValidationIssue[]))
      return value
    }
    const params = parse(schemas.params, req.params, 'params')
    const query = parse(schemas.query, req.query, 'query')
    const body = parse(schemas.body, req.body ?? undefined, 'body')
    if (issues.length) {
      const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''
      throw new ApiError('bad_request', `${issues[0]!.field}: ${issues[0]!.message}${more}`, { issues })
    }
    if (schemas.params) req.params = params as typeof req.params
    // Express 5 exposes req.query as a getter; shadow it with the parsed value.
    if (schemas.query)
      Object.defineProperty(req, 'query', {
        value: query,
        writable: true,
        configurable: true,
        enumerable: true,
      })
    if (schemas.body) req.body = body
    next()
  }
}

/** Typed access to what `validate(schemas)` parsed, for the handler that follows it. */
export function inputOf<S extends InputSchemas>(
  _schemas: S,
  req: { params: unknown; query: unknown; body: unknown },
): ParsedInput<S> {
  return { params: req.params, query: req.query, body: req.body } as ParsedInput<S>
}

/**
 * The input rule (findMalformedString) for everything a request brings before any route sees
 * it: the path and query as sent (malformed percent-encoding, bytes that are not UTF-8, an
 * encoded NUL) and the parsed JSON body. Mounted by createHttpApp right after the JSON parser,
 * so no route can forget it; 400 bad_request naming the field.
 */
export function wellFormedInput(): RequestHandler {
  return (req, _res, next) => {
    const url = req.url
    if (url.includes('%')) {
      const q = url.indexOf('?')
      checkEncoded(q < 0 ? url : url.slice(0, q), 'path', false)
      if (q >= 0)
        for (const pair of url.slice(q + 1).split('&')) {
          const eq = pair.indexOf('=')
          const name = checkEncoded(eq < 0 ? pair : pair.slice(0, eq), 'query', true)
          if (eq >= 0) checkEncoded(pair.slice(eq + 1), `query.${name}`, true)
        }
    }
    assertWellFormedBody(req.body)
    next()
  }
}

/** wellFormedInput's rule for a parsed body (express's `req.body`), for a path that reads it itself. */
export function assertWellFormedBody(body: unknown): void {
  if (body !== undefined && typeof body === 'object') assertWellFormed(body, 'body')
}

/** Decodes one part of the URL as sent, or throws 400 naming `field`; returns the decoded text. */
function checkEncoded(raw: string, field: string, form: boolean): string {
  if (!raw.includes('%')) return raw
  let decoded: string
  try {
    decoded = decodeURIComponent(form ? raw.replaceAll('+', ' ') : raw)
  } catch {
    throw new ApiError('bad_request', `${field}: malformed percent-encoding or not UTF-8`, {
      issues: [{ field, message: 'malformed percent-encoding or not UTF-8' }],
    })
  }
  assertWellFormed(decoded, field)
  return decoded
}

/**
 * express.json's `verify`: a body declared (or defaulted) UTF-8 that is not valid UTF-8 is
 * refused rather than decoded with replacement characters, which would store something other
 * than what the client sent.
 */
export function verifyUtf8Body(_req: unknown, _res: unknown, buf: Buffer, encoding: string): void {
  if (encoding.toLowerCase().replace('-', '') === 'utf8' && !isUtf8(buf))
    throw Object.assign(new Error('request body is not valid UTF-8'), { type: 'encoding.invalid_utf8' })
}

/**
 * How deep arrays and objects may nest in a JSON body (or a JSON text in a query string): deep
 * enough for any request these services take, far short of what recursive code (JSON.stringify,
 * zod, a logger) can walk before the stack runs out (a 20 KB body nests 10,000 deep).
 */
export const MAX_JSON_DEPTH = 64

/**
 * Whether JSON text nests arrays and objects deeper than `max`: one pass over the text counting
 * brackets outside strings, with no recursion and nothing allocated, so it can run before
 * JSON.parse. Text that is not JSON gets an answer too (JSON.parse refuses it next).
 */
export function jsonNestsDeeperThan(text: string | Uint8Array, max = MAX_JSON_DEPTH): boolean {
  let depth = 0
  let inString = false
  const bytes = typeof text === 'string' ? undefined : text
  const length = text.length
  for (let i = 0; i < length; i++) {
    const c = bytes ? bytes[i]! : (text as string).charCodeAt(i)
    if (inString) {
      if (c === 0x5c)
        i++ // a backslash: the next character is escaped
      else if (c === 0x22) inString = false
    } else if (c === 0x22) inString = true
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true
    } else if (c === 0x5d || c === 0x7d) depth--
  }
  return false
}

/**
 * Throws when JSON text nests deeper than MAX_JSON_DEPTH: body-parser's kind of error (its
 * `type` `entity.too.deep`, status 400), which every envelope maps to 400 bad_request.
 */
export function assertJsonDepth(text: string | Uint8Array, max = MAX_JSON_DEPTH): void {
  if (jsonNestsDeeperThan(text, max))
    throw Object.assign(new Error(`JSON nests deeper than ${max} levels of arrays and objects`), {
      type: 'entity.too.deep',
      status: 400,
      limit: max,
    })
}

/**
 * express.json's `verify` for every service: the body is UTF-8 (verifyUtf8Body) and nests no
 * deeper than MAX_JSON_DEPTH, checked on the bytes before JSON.parse, so nothing recursive ever
 * sees a deeper value.
 */
export function verifyJsonBody(req: unknown, res: unknown, buf: Buffer, encoding: string): void {
  verifyUtf8Body(req, res, buf, encoding)
  assertJsonDepth(buf)
}
