import type { Express } from 'express'
import { z } from 'zod'
import type { InputSchemas } from './validate.ts'

/**
 * OpenAPI 3.1 from the same zod schemas that validate requests (OpenAPI 3.1 schemas are JSON
 * Schema 2020-12, which zod 4 emits natively). Each service lists its operations once; the
 * document is served at `/openapi.json`, built on its first request.
 */
export interface OperationDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head'
  /** Express-style path (`/api/v1/keys/:hash`); converted to `{hash}`. */
  path: string
  operationId: string
  summary: string
  description?: string
  tags?: string[]
  /** Names of security schemes (from the document's components); [] for public operations. */
  security?: string[]
  request?: InputSchemas
  responses: Record<
    number,
    { description: string; schema?: z.ZodType; contentType?: string; headers?: Record<string, string> }
  >
}

export interface OpenApiInfo {
  title: string
  version: string
  description?: string
  servers?: Array<{ url: string; description?: string }>
  securitySchemes?: Record<string, unknown>
}

const jsonSchema = (schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >
  return rest
}

export function createOpenApiDocument(
  info: OpenApiInfo,
  operations: OperationDoc[],
): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const op of operations) {
    const path = op.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    const parameters: unknown[] = []
    for (const where of ['params', 'query'] as const) {
      const schema = op.request?.[where]
      if (!schema) continue
      const objectSchema = jsonSchema(schema, 'input') as {
        properties?: Record<string, unknown>
        required?: string[]
      }
      for (const [name, property] of Object.entries(objectSchema.properties ?? {})) {
        parameters.push({
          name,
          in: where === 'params' ? 'path' : 'query',
          required: where === 'params' || (objectSchema.required ?? []).includes(name),
          schema: property,
        })
      }
    }
    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      ...(op.tags ? { tags: op.tags } : {}),
      ...(op.security ? { security: op.security.map((s) => ({ [s]: [] })) } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(op.request?.body
        ? {
            requestBody: {
              required: true,
              content: { 'application/json': { schema: jsonSchema(op.request.body, 'input') } },
            },
          }
        : {}),
      responses: Object.fromEntries(
        Object.entries(op.responses).map(([status, r]) => [
          status,
          {
            description: r.description,
            ...(r.headers
              ? {
                  headers: Object.fromEntries(
                    Object.entries(r.headers).map(([h, d]) => [
                      h,
                      { description: d, schema: { type: 'string' } },
                    ]),
                  ),
                }
              : {}),
            ...(r.schema
              ? {
                  content: {
                    [r.contentType ?? 'application/json']: { schema: jsonSchema(r.schema, 'output') },
                  },
                }
              : {}),
          },
        ]),
      ),
    }
    paths[path] = { ...(paths[path] ?? {}), [op.method]: operation }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: info.title,
      version: info.version,
      ...(info.description ? { description: info.description } : {}),
    },
    ...(info.servers ? { servers: info.servers } : {}),
    paths,
    ...(info.securitySchemes ? { components: { securitySchemes: info.securitySchemes } } : {}),
  }
}

/**
 * Serves the document at `/openapi.json`. Given as a function, it is built on the first request
 * (once): a service's start then does not pay for turning every zod schema into JSON Schema.
 */
export function serveOpenApi(
  app: Express,
  document: Record<string, unknown> | (() => Record<string, unknown>),
): void {
  let body: string | undefined = typeof document === 'function' ? undefined : JSON.stringify(document)
  app.get('/openapi.json', (_req, res) => {
    body ??= JSON.stringify((document as () => Record<string, unknown>)())
    res.set('Cache-Control', 'public, max-age=300').type('application/json').send(body)
  })
}
