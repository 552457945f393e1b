import type { RequestHandler } from 'express'
import type { z } from 'zod'
import { ApiError } from './errors.ts'

/**
 * Validation at the edge (STYLE 2): one middleware parses params, query and body with zod and
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

/** Parse `value` or throw 400 bad_request; usable by any adapter (REST, JSON-RPC, GraphQL, CLI). */
export function parseInput<T extends z.ZodType>(schema: T, value: unknown, where = 'input'): z.output<T> {
  const result = schema.safeParse(value)
  if (result.success) return result.data
  throw validationError(result.error, where)
}

export function validationError(error: z.ZodError, where: string): ApiError {
  const issues: ValidationIssue[] = error.issues.map((issue) => ({
    field: [where, ...issue.path.map(String)].join('.'),
    message: describeIssue(issue),
  }))
  const first = issues[0]
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ''
  return new ApiError('bad_request', first ? `${first.field}: ${first.message}${more}` : `invalid ${where}`, {
    issues,
  })
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`
  if (issue.code === 'invalid_type' && issue.input === undefined) return 'is required'
  return issue.message
}

/** The middleware. Parsed values replace `req.params`, `req.query` and `req.body`; every bad part is reported at once. */
export function validate<S extends InputSchemas>(schemas: S): RequestHandler {
  return (req, _res, next) => {
    const issues: ValidationIssue[] = []
    const parse = (schema: z.ZodType | undefined, value: unknown, where: string): unknown => {
      if (!schema) return value
      const result = schema.safeParse(value)
      if (result.success) return result.data
      issues.push(...(validationError(result.error, where).details!.issues as ValidationIssue[]))
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
