import { type AnyOperation, assertUniqueNames } from '@quartet/core/operation'
import type { HotRoute } from '@quartet/core/http'
import { hotRoutesOf, mountOperations } from '@quartet/core/operation/express'
import { operationDocOf } from '@quartet/core/operation/openapi'
import { createOpenApiDocument, type OperationDoc } from '@quartet/core/openapi'
import type { Express } from 'express'
import { z } from 'zod'
import { adminOperations } from './admin.ts'
import { SESSION_COOKIE, pickupShareAuth } from './auth.ts'
import { downloadOperations } from './download.ts'
import type { Services } from './services.ts'
import { shareOperations } from './share.ts'
import { storeOperations } from './stores.ts'
import { tusOperations } from './tus.ts'
import { blobUploadOperation, repoUploadOperation, requestUploadOperation } from './upload.ts'
import { generateClientTokenOperation, vercelBlobPutOperation } from './vercel-blob.ts'
import { webOperations } from './web.ts'

/**
 * Every pickup-share API endpoint, each defined once (src/http/*.ts): app.ts serves them, and
 * /openapi.json documents them. The tus 1.0 endpoints stay outside (tus.ts: a protocol of its
 * own whose answers @tus/server writes), as do the pages and their assets (web.ts).
 */
export const uploadOperations = [
  requestUploadOperation,
  generateClientTokenOperation,
  vercelBlobPutOperation,
  blobUploadOperation,
  repoUploadOperation,
] as const

export const pickupShareOperations: ReadonlyArray<AnyOperation<Services>> = [
  ...uploadOperations,
  ...shareOperations,
  ...downloadOperations,
  ...adminOperations,
  ...storeOperations,
  ...webOperations,
]
assertUniqueNames(pickupShareOperations)

/** Mounts a group of the operations (app.ts keeps the order the routes need). */
export function mount(app: Express, s: Services, operations: ReadonlyArray<AnyOperation<Services>>): void {
  mountOperations(app, operations, { deps: s, auth: pickupShareAuth(s) })
}

/** The hot reads among `operations` (core's HotRead), answered before express. */
export function hotRoutes(s: Services, operations: ReadonlyArray<AnyOperation<Services>>): HotRoute[] {
  return hotRoutesOf(operations, { deps: s, auth: pickupShareAuth(s) })
}

/** The error envelope of every refusal (core's `code` style). */
export const ZErrorEnvelope = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).optional(),
    request_id: z.string().optional(),
  }),
})

/**
 * POST /api/upload is two operations told apart by the body (vercel-blob.ts
 * registerUploadRequests); the document lists the path once, with either body and either answer.
 */
function uploadRequestDoc(): OperationDoc {
  const permission = operationDocOf(requestUploadOperation, { errorSchema: ZErrorEnvelope })
  const token = operationDocOf(generateClientTokenOperation, { errorSchema: ZErrorEnvelope })
  return {
    ...permission,
    request: {
      body: z.union([requestUploadOperation.input.body, generateClientTokenOperation.input.body]),
    },
    responses: {
      ...token.responses,
      ...permission.responses,
      200: {
        description: 'where and how to upload; for a client token request, `{type, clientToken}`',
        schema: z.union([
          requestUploadOperation.responses[200].schema,
          generateClientTokenOperation.responses[200].schema,
        ]),
      },
    },
  }
}

/** OpenAPI 3.1 generated from the operations, and the tus endpoints' own list. */
export function pickupShareOpenApi(): Record<string, unknown> {
  const docs = pickupShareOperations
    .filter((op) => op !== requestUploadOperation && op !== generateClientTokenOperation)
    .map((op) => operationDocOf(op, { errorSchema: ZErrorEnvelope }))
  return createOpenApiDocument(
    {
      title: 'pickup-share',
      version: '1.0.0',
      description: 'File sharing with pickup codes: client-direct uploads, counted downloads, an admin area.',
      securitySchemes: {
        adminSession: { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE },
        uploadToken: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Upload-Token',
          description: 'the token of an upload permission from /api/upload',
        },
        clientToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'a Vercel Blob client token from /api/upload (blob.generate-client-token)',
        },
      },
    },
    [uploadRequestDoc(), ...docs, ...tusOperations],
  )
}
