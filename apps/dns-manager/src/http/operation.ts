import type { z } from 'zod'
import type { UseCases, Principal } from '../domain/use-cases.ts'

/**
 * One operation, defined once: its name (the JSON-RPC method), zod input, handler, REST route and
 * GraphQL field. The REST, JSON-RPC and GraphQL adapters are thin loops over the registry.
 */
export interface Operation<S extends z.ZodType = z.ZodType, O = unknown> {
  name: string
  summary: string
  input: S
  /** Writes are audited. */
  write: boolean
  /** An ACME-only credential may call it (the domain still checks each record it touches). */
  acme?: boolean
  rest: {
    method: 'get' | 'post'
    path: string
    /** PATCH/DELETE (or a second POST form) on the resource URL, accepted as well. */
    also?: Array<{ method: 'post' | 'patch' | 'delete'; path: string }>
    status?: number
    /** Non-JSON answers (the BIND zone file). */
    raw?: (output: O) => { contentType: string; body: string }
  }
  graphql: { kind: 'query' | 'mutation'; field: string; args: string; type: string }
  /** What the audit log names as the target. */
  target?: (input: z.output<S>, output?: unknown) => string
  handler: (ctx: { useCases: UseCases; principal: Principal }, input: z.output<S>) => Promise<O>
}

/** Keeps the input type of each operation while the registry holds them side by side. */
export function defineOperation<S extends z.ZodType, O>(op: Operation<S, O>): Operation {
  return op as unknown as Operation
}

/** `output.<key>.id` when the operation returned one (for audit targets). */
export function createdId(output: unknown, key: string): string {
  const inner = (output as Record<string, { id?: unknown } | undefined> | undefined)?.[key]
  return inner?.id === undefined ? 'new' : String(inner.id)
}
