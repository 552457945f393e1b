import type { AnyOperation } from '@quartet/core/operation'
import { operationsDocument } from '@quartet/core/operation/openapi'
import type { RouteDeps } from './deps.ts'
import { getCurrentKey } from './key.ts'
import { keysOperations } from './keys.ts'
import { ZError } from './schemas.ts'
import { recordUsageOperation } from './usage.ts'

/** Every key-info API endpoint: app.ts serves these, and /openapi.json documents them. */
export const keyInfoOperations: ReadonlyArray<AnyOperation<RouteDeps>> = [
  getCurrentKey,
  ...keysOperations,
  recordUsageOperation,
]

/** OpenAPI 3.1 generated from the operations: the same zod schemas validate requests and describe answers. */
export function keyInfoOpenApi(): Record<string, unknown> {
  return operationsDocument(
    {
      title: 'Quartet key-info',
      version: '1.0.0',
      description:
        'Facts about the calling API key (spend, usage windows, limits, flags, expiry), management keys, and an idempotent usage ledger. Amounts are USD, exact to 1 µUSD. Errors: {"error":{"code":<HTTP status>,"message":"…"}}.',
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key, sk-qk-v1-…' } },
    },
    keyInfoOperations,
    { errorSchema: ZError },
  )
}
