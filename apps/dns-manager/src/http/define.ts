import { ApiError } from '@quartet/core/errors'
import {
  type AuthRequirement,
  defineAuth,
  type ErrorDocs,
  type HotRead,
  type OperationDefinition,
  type OperationRoute,
  reply,
  type SuccessResponses,
} from '@quartet/core/operation'
import type { InputSchemas } from '@quartet/core/validate'
import { withHead } from '@quartet/core/json-text'
import type { Response } from 'express'
import { z } from 'zod'
import type { Principal, UseCases } from '../domain/use-cases.ts'

/**
 * dns-manager's operations as core operation definitions (`@quartet/core/operation`), each with
 * what its three call styles share: one flat argument schema (`args`: REST's path parameters with
 * its query or body, JSON-RPC params, GraphQL arguments), parsed in the one pipeline
 * (pipeline.ts) after the caller's scope is checked, and the use case it calls. From the
 * definition come the REST route at `/rest<path>` (core's mountOperations, under each prefix),
 * the OpenAPI entry with its output schema, the JSON-RPC method (its name) and the GraphQL field.
 */

/** Credentials in X-API-Key/X-API-Secret, Bearer KEY:SECRET, or HTTP Basic KEY:SECRET. */
const SECURITY = ['apiKey', 'bearer', 'basic']
const CREDENTIAL_ERRORS: ErrorDocs = {
  auth_invalid_credentials: 'missing, unknown or revoked credentials',
  auth_ip_not_allowed: 'the key has an IP allow list without the caller',
  api_access_disabled: 'the account has API access switched off',
  rate_limit_exceeded: 'rate limit exceeded (details.reset_at)',
}

/** A full API key or a web session; an ACME-only credential is refused before the input is read. */
export const apiCredential = defineAuth<Principal>({
  name: 'apiCredential',
  security: SECURITY,
  errors: {
    ...CREDENTIAL_ERRORS,
    credential_scope_forbidden: 'an ACME-only key, outside its scope',
  },
})

/** As apiCredential, and an ACME-only credential too (the domain checks each record it touches). */
export const acmeCredential = defineAuth<Principal>({
  name: 'acmeCredential',
  security: SECURITY,
  errors: {
    ...CREDENTIAL_ERRORS,
    credential_scope_forbidden: 'an ACME-only key, for a name outside _acme-challenge',
  },
})

/** What the REST routes are mounted with: the pipeline's one call of an operation. */
export interface RestDeps {
  run(op: DnsOperation, principal: Principal, rawInput: unknown): Promise<unknown>
}

export interface DnsOperationSpec<S extends z.ZodObject, O> {
  /** The operationId and the JSON-RPC method. */
  name: string
  summary: string
  /** The one flat argument schema of the three call styles (strict: an unknown argument is a 400). */
  args: S
  /** Its answer, without REST's `success: true` (the JSON-RPC result, the GraphQL field's type). */
  output: z.ZodObject
  /** Writes are audited. */
  write: boolean
  auth: AuthRequirement<Principal>
  errors: ErrorDocs
  /** The REST route, under `/rest` (and `/api/v1/rest`). */
  rest: {
    method: 'get' | 'post'
    path: string
    /** PATCH/DELETE (or a second POST form) on the resource URL, accepted as well. */
    also?: Array<{ method: 'post' | 'patch' | 'delete'; path: string }>
    status?: 200 | 201
    /** A REST answer that is not JSON (the BIND zone file); the other call styles answer `output`. */
    raw?: { contentType: string; documented: string; body: (output: O) => string }
  }
  /** The GraphQL root field: its arguments and type in SDL (a test checks them against the schemas). */
  graphql: { kind: 'query' | 'mutation'; field: string; args: string; type: string }
  /**
   * A read answered before express at its REST route (core's HotRead): a read every client
   * polls, whose JSON answer the pipeline makes the same either way.
   */
  hot?: HotRead
  /** What the audit log names as the target. */
  target?: (input: z.output<S>, output?: unknown) => string
  call: (ctx: { useCases: UseCases; principal: Principal }, input: z.output<S>) => Promise<O>
}

export type DnsOperation = OperationDefinition<
  InputSchemas,
  SuccessResponses,
  Principal,
  RestDeps,
  unknown
> & {
  args: z.ZodObject
  output: z.ZodObject
  write: boolean
  status: 200 | 201
  graphql: DnsOperationSpec<z.ZodObject, unknown>['graphql']
  raw?: (output: unknown) => { contentType: string; body: string }
  target?: (input: never, output?: unknown) => string
  call: (ctx: { useCases: UseCases; principal: Principal }, input: never) => Promise<unknown>
}

const restPath = (path: string) => `/rest${path}`
const NO_STORE = { 'Cache-Control': 'no-store' } as const

/** The request's parts as the OpenAPI document shows them: path parameters, then the query or body. */
function requestSchemas(args: z.ZodObject, route: { method: string; path: string }): InputSchemas {
  const pathParams = [...route.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]!)
  const shape = args.shape as Record<string, z.ZodType>
  const params = z.object(Object.fromEntries(pathParams.map((p) => [p, shape[p]!])))
  const rest = z.object(Object.fromEntries(Object.entries(shape).filter(([k]) => !pathParams.includes(k))))
  const hasRest = Object.keys(rest.shape).length > 0
  return {
    ...(pathParams.length ? { params } : {}),
    ...(hasRest ? (route.method === 'get' ? { query: rest } : { body: rest }) : {}),
  }
}

/**
 * A definition as its module declares it: its name, argument and output schemas keep their own
 * types, for the clients that take their types from it (the back office's `op`, web/src/api.ts).
 */
export type DefinedOperation<N extends string, S extends z.ZodObject, Out extends z.ZodObject> = Omit<
  DnsOperation,
  'name' | 'args' | 'output'
> & {
  readonly name: N
  readonly args: S
  readonly output: Out
}

export function defineOperation<const N extends string, S extends z.ZodObject, O, Out extends z.ZodObject>(
  spec: DnsOperationSpec<S, O> & { name: N; output: Out },
): DefinedOperation<N, S, Out> {
  const status = spec.rest.status ?? 200
  const raw = spec.rest.raw
  const op: DnsOperation = {
    name: spec.name,
    summary: spec.summary,
    tags: [spec.name.split('.')[0]!],
    route: { method: spec.rest.method, path: restPath(spec.rest.path) },
    also: (spec.rest.also ?? []).map((r): OperationRoute => ({
      method: r.method,
      path: restPath(r.path),
      operationId: `${spec.name}.${r.method}`,
    })),
    input: requestSchemas(spec.args, spec.rest),
    // Parsed by the pipeline with the flat schema, as JSON-RPC and GraphQL arguments are.
    inputParsedBy: 'handler',
    responses: {
      [status]: raw
        ? { description: raw.documented, contentType: 'text/dns', schema: z.string() }
        : {
            description: 'success: `{success:true, …}`',
            schema: z.object({ success: z.literal(true), ...spec.output.shape }),
          },
    },
    auth: spec.auth,
    // Every answer may carry an account's data or a new API secret: no cache may keep one.
    headers: NO_STORE,
    ...(spec.hot ? { hot: spec.hot } : {}),
    // Every operation parses its arguments strictly: even one without any refuses an unknown one.
    errors: {
      bad_request: 'an unknown or invalid argument, or a body that is not a JSON object',
      ...spec.errors,
    },
    rpc: { method: spec.name },
    graphql: spec.graphql,
    args: spec.args,
    output: spec.output,
    write: spec.write,
    status,
    ...(raw
      ? { raw: (output: unknown) => ({ contentType: raw.contentType, body: raw.body(output as O) }) }
      : {}),
    ...(spec.target ? { target: spec.target as DnsOperation['target'] } : {}),
    call: spec.call as DnsOperation['call'],
    async handler(input, { caller, deps, req }) {
      // REST's arguments: the query of a GET, else the JSON body, with the path parameters.
      const body = input.body
      if (
        req.method !== 'GET' &&
        body !== undefined &&
        (typeof body !== 'object' || body === null || Array.isArray(body))
      )
        throw new ApiError('bad_request', 'the JSON body must be an object')
      const from = req.method === 'GET' ? input.query : ((body as Record<string, unknown> | undefined) ?? {})
      const output = await deps.run(op, caller, { ...(from as object), ...input.params })
      // A cached view keeps its JSON: the answer splices it in (withHead) instead of serialising it.
      return op.raw ? output : reply(status, withHead({ success: true }, output as object))
    },
  }
  if (op.raw) {
    const render = op.raw
    op.respond = (output, _req, res) => {
      const answer = render(output)
      // Express's response (the route is express's): the bytes the REST router sent before.
      ;(res as Response).type(answer.contentType).send(answer.body)
    }
  }
  return op as DefinedOperation<N, S, Out>
}

/** `output.<key>.id` when the operation returned one (for audit targets). */
export function createdId(output: unknown, key: string): string {
  const inner = (output as Record<string, { id?: unknown } | undefined> | undefined)?.[key]
  return inner?.id === undefined ? 'new' : String(inner.id)
}
