import { createOpenApiDocument } from '@quartet/core/openapi'
import { keyOperations } from './key.ts'
import { keysOperations } from './keys.ts'
import { usageOperations } from './usage.ts'

/** OpenAPI 3.1 built from the same zod schemas that validate the requests. */
export function keyInfoOpenApi(): Record<string, unknown> {
  return createOpenApiDocument(
    {
      title: 'Quartet key-info',
      version: '1.0.0',
      description:
        'Facts about the calling API key (spend, usage windows, limits, flags, expiry), management keys, and an idempotent usage ledger. Amounts are USD, exact to 1 µUSD. Errors: {"error":{"code":<HTTP status>,"message":"…"}}.',
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API key, sk-qk-v1-…' } },
    },
    [...keyOperations, ...keysOperations, ...usageOperations],
  )
}
