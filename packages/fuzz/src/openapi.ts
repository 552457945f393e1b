import type { JsonSchema } from './schema.ts'

/** One operation of a service's `/openapi.json`, as the generators need it. */
export interface OperationSpec {
  /** `operationId`, e.g. `keys.create` (dns-manager's are its JSON-RPC method names). */
  id: string
  method: string
  /** The template, `{name}` for path parameters. */
  path: string
  pathParams: Array<{ name: string; schema: JsonSchema }>
  queryParams: Array<{ name: string; schema: JsonSchema; required: boolean }>
  /** The JSON body's schema, when the operation takes one. */
  body?: JsonSchema
  /** Names of the security schemes; empty for a public operation. */
  security: string[]
}

interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>
}

interface OpenApiOperation {
  operationId?: string
  security?: Array<Record<string, unknown>>
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: JsonSchema }>
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> }
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options']

/** Every operation of the document, in its order. */
export function operationsOf(document: unknown): OperationSpec[] {
  const doc = document as OpenApiDocument
  const out: OperationSpec[] = []
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.includes(method)) continue
      const parameters = op.parameters ?? []
      out.push({
        id: op.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        pathParams: parameters
          .filter((p) => p.in === 'path')
          .map((p) => ({ name: p.name, schema: p.schema ?? {} })),
        queryParams: parameters
          .filter((p) => p.in === 'query')
          .map((p) => ({ name: p.name, schema: p.schema ?? {}, required: p.required === true })),
        ...(op.requestBody?.content?.['application/json']?.schema
          ? { body: op.requestBody.content['application/json'].schema }
          : {}),
        security: (op.security ?? []).flatMap((s) => Object.keys(s)),
      })
    }
  }
  return out
}

/** Reads a running service's document. */
export async function fetchOperations(baseUrl: string): Promise<OperationSpec[]> {
  const res = await fetch(`${baseUrl}/openapi.json`, { signal: AbortSignal.timeout(10_000) })
  if (res.status !== 200) throw new Error(`${baseUrl}/openapi.json answered ${res.status}`)
  return operationsOf(await res.json())
}
