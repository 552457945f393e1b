import type { AnyOperation, HttpMethod, InputOf, OutputOf } from './operation.ts'

/**
 * What a client needs to call an operation, typed from its definition: the request to send
 * (method, path with its parameters filled in, query, JSON body) and the answer read back through
 * the operation's output schema. No answer shape is typed by hand on the client side.
 */
export interface OperationRequest {
  method: Uppercase<HttpMethod>
  /** The path with each `:name` replaced by its encoded value, and the query string if any. */
  url: string
  body?: unknown
}

export function requestOf<O extends AnyOperation>(op: O, input: InputOf<O>): OperationRequest {
  const parts = input as { params?: Record<string, unknown>; query?: Record<string, unknown>; body?: unknown }
  const path = op.route.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => {
    const value = parts.params?.[name]
    if (value === undefined) throw new Error(`${op.name}: path parameter ${name} is missing`)
    return encodeURIComponent(String(value))
  })
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(parts.query ?? {}))
    if (value !== undefined) query.append(name, String(value))
  const search = query.size ? `?${query}` : ''
  return {
    method: op.route.method.toUpperCase() as Uppercase<HttpMethod>,
    url: path + search,
    ...(parts.body !== undefined ? { body: parts.body } : {}),
  }
}

/**
 * Reads a success answer: its status must be one the operation declares, and its body is parsed
 * with that status's output schema (a zod error when the service answered something else).
 */
export function readReply<O extends AnyOperation>(op: O, status: number, body: unknown): OutputOf<O> {
  const response = (op.responses as Record<number, { schema?: { parse(v: unknown): unknown } }>)[status]
  if (!response) throw new Error(`${op.name} answered ${status}, which is not one of its success statuses`)
  return (response.schema ? response.schema.parse(body) : undefined) as OutputOf<O>
}
