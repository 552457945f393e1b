import type { z } from 'zod'
import { type ErrorCode, statusOf } from './errors.ts'
import { type AnyOperation, assertUniqueNames, type ErrorDocs, routesOf } from './operation.ts'
import { createOpenApiDocument, type OpenApiInfo, type OperationDoc } from './openapi.ts'

/**
 * The OpenAPI 3.1 document of a set of operations: request parameters and body from the input
 * schemas, each success status with its output schema, and each error status the operation or its
 * auth requirement can raise (the codes' statuses from the one code→status table) with the app's
 * error envelope. Nothing is listed by hand beside the definitions.
 */
export interface OperationsDocumentOptions {
  /** The app's error envelope, the body of every error answer. */
  errorSchema: z.ZodType
}

/**
 * A 429 tells the client when to come back (core's rateLimitError sets Retry-After); a 503 does
 * only when a dependency failed (toApiError), not when an operation answers it itself.
 */
const RETRY_AFTER_STATUSES = new Set([429])

export function errorResponsesOf(op: AnyOperation, errorSchema: z.ZodType): OperationDoc['responses'] {
  const hasInput = op.input.params || op.input.query || op.input.body
  const docs: ErrorDocs[] = [
    op.auth.errors,
    // Validation's 400, unless the operation says in its own words when it answers that.
    hasInput && !op.errors.bad_request ? { bad_request: 'invalid input' } : {},
    op.errors,
  ]
  const byStatus = new Map<number, string[]>()
  for (const [code, description] of docs.flatMap((d) => Object.entries(d) as Array<[ErrorCode, string]>)) {
    const status = statusOf(code)
    const descriptions = byStatus.get(status) ?? []
    if (!descriptions.includes(description)) descriptions.push(description)
    byStatus.set(status, descriptions)
  }
  const responses: OperationDoc['responses'] = {}
  for (const status of [...byStatus.keys()].sort((a, b) => a - b))
    responses[status] = {
      description: byStatus.get(status)!.join('; '),
      schema: errorSchema,
      ...(RETRY_AFTER_STATUSES.has(status) ? { headers: { 'Retry-After': 'seconds' } } : {}),
    }
  return responses
}

/**
 * One operation as the document lists it, at its main route; further routes are named in its
 * description, except those with an operationId of their own (operationDocsOf lists them).
 */
export function operationDocOf(op: AnyOperation, options: OperationsDocumentOptions): OperationDoc {
  const aliases = routesOf(op)
    .slice(1)
    .filter((r) => !r.operationId)
    .map((r) => `${r.method.toUpperCase()} ${r.path}`)
  const description = [op.description, aliases.length ? `Also served at ${aliases.join(', ')}.` : undefined]
    .filter(Boolean)
    .join(' ')
  return {
    method: op.route.method,
    path: op.route.path,
    operationId: op.name,
    summary: op.summary,
    ...(description ? { description } : {}),
    ...(op.tags ? { tags: op.tags } : {}),
    security: op.auth.security,
    request: op.input,
    responses: { ...op.responses, ...errorResponsesOf(op, options.errorSchema) },
  }
}

/** The document's entries of one operation: its main route, and each further route with an operationId of its own. */
export function operationDocsOf(op: AnyOperation, options: OperationsDocumentOptions): OperationDoc[] {
  const main = operationDocOf(op, options)
  const own = routesOf(op)
    .slice(1)
    .filter((r) => r.operationId)
    .map((r) => ({ ...main, method: r.method, path: r.path, operationId: r.operationId! }))
  return [main, ...own]
}

export function operationsDocument(
  info: OpenApiInfo,
  operations: readonly AnyOperation[],
  options: OperationsDocumentOptions,
): Record<string, unknown> {
  assertUniqueNames(operations)
  return createOpenApiDocument(
    info,
    operations.flatMap((op) => operationDocsOf(op, options)),
  )
}
