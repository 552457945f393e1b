import type { IncomingMessage, ServerResponse } from 'node:http'
import { ZodObject, type z } from 'zod'
import type { ErrorCode } from './errors.ts'
import type { HeaderSink } from './http.ts'
import { type InputSchemas, type ParsedInput, parseInput } from './validate.ts'

/**
 * One operation, defined once: its name, input and output schemas, route, who may call it, the
 * error codes it can raise and a handler that calls a use case. Everything else is derived from
 * the definition: the express route with its validation (operation-express.ts), the hot route
 * that answers before express, the OpenAPI document (operation-openapi.ts) and the types a
 * client uses (InputOf, OutputOf, and operation-client.ts).
 */

export type HttpMethod = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete'

export interface OperationRoute {
  method: HttpMethod
  /** Express-style path (`/api/v1/keys/:hash`). */
  path: string
  /**
   * For a further route (`also`): documented as an operation of its own under this operationId
   * (a second method at another path, which a client reads as its own entry), not only named in
   * the main route's description.
   */
  operationId?: string
}

/**
 * What makes a read hot, stated where the operation is defined. A hot read is answered before
 * express by core's hot routes (operation-express.ts, hotRoutesOf), the one mechanism of every
 * app: at its exact route (under each prefix the app serves it at), when the request is a GET
 * without a query string or a POST without a body; every other request at the path goes on to
 * express. The hot route runs the express route's own steps (the operation's headers, its auth
 * resolver, the same input, the handler, the reply), so the two answers are equal by
 * construction; `expectHotParity` (`@quartet/core/testing/operations`) sends each hot read of an
 * app both ways and compares status, headers and body. The two fields say what the answer is
 * made of and how it stays true, for whoever changes what it reads (they are documentation: a
 * hot read is not itself a cache).
 */
export interface HotRead {
  /** What the answer is made of, and where each part is read from on a request. */
  dependsOn: string
  /** How a change to what it depends on reaches the next answer, on every replica. */
  invalidatedBy: string
}

/** One success answer: its status, what it holds (zod, the JSON the client receives) and its headers. */
export interface SuccessResponse {
  description: string
  /** The body's schema; none for an answer without a body (a 304). */
  schema?: z.ZodType
  /** Media type of the body, when not `application/json`. */
  contentType?: string
  /** Response headers worth documenting: name → what it holds. */
  headers?: Record<string, string>
}

export type SuccessResponses = Record<number, SuccessResponse>

/** The error codes an operation can raise (from the app's error table), each with when it does. */
export type ErrorDocs = Partial<Record<ErrorCode, string>>

/**
 * Who may call an operation: a named requirement the app resolves at mount time (a bearer key, a
 * management key, an admin session, nobody in particular) into a caller of type `Caller`. The
 * definition holds only what the document needs (its security scheme names and the errors it
 * raises); the resolver is bound with `resolveWith` where the app has its dependencies.
 */
export interface AuthRequirement<Caller = unknown> {
  name: string
  /** Names of the OpenAPI security schemes that satisfy it; [] for a public operation. */
  security: string[]
  /** What resolving it may refuse with (401, 403, 429 …). */
  errors: ErrorDocs
  /** Carries the caller's type only; never set. */
  readonly caller?: Caller
}

export function defineAuth<Caller>(
  requirement: Omit<AuthRequirement<Caller>, 'caller'>,
): AuthRequirement<Caller> {
  return requirement
}

/** Anyone may call it: the caller is nothing. */
export const publicAccess = defineAuth<undefined>({ name: 'public', security: [], errors: {} })

/**
 * Resolves the caller from the request, before any input is looked at; throws an ApiError to
 * refuse. Runs in express and in a hot route alike, so it sees node's request and sets response
 * headers (rate-limit headers, for one) through a HeaderSink.
 */
export type AuthResolver<Caller> = (req: IncomingMessage, headers: HeaderSink) => Promise<Caller> | Caller

export interface AuthBinding<Caller = unknown> {
  requirement: AuthRequirement<Caller>
  resolve: AuthResolver<Caller>
}

export function resolveWith<Caller>(
  requirement: AuthRequirement<Caller>,
  resolve: AuthResolver<Caller>,
): AuthBinding<Caller> {
  return { requirement, resolve }
}

/** A handler's answer: one of the operation's success statuses with the body its schema describes. */
export type Reply<R extends SuccessResponses> = {
  [S in keyof R & number]: {
    status: S
    body: R[S]['schema'] extends z.ZodType ? z.input<R[S]['schema']> : undefined
  }
}[keyof R & number]

/** A reply with its status kept as the literal the definition declares (`reply(201, body)`). */
export function reply<const S extends number, B>(status: S, body: B): { status: S; body: B } {
  return { status, body }
}

export interface OperationContext<Caller, Deps> {
  caller: Caller
  /** What the app handed to mountOperations: the use cases' dependencies. */
  deps: Deps
  /** Response headers beyond the body (set before the answer is written). */
  headers: HeaderSink
  req: IncomingMessage
}

export interface OperationDefinition<
  I extends InputSchemas = InputSchemas,
  R extends SuccessResponses = SuccessResponses,
  Caller = unknown,
  Deps = unknown,
  Result = Reply<R>,
> {
  /** The operationId; unique in the app. */
  name: string
  summary: string
  description?: string
  tags?: string[]
  route: OperationRoute
  /** The same operation at further routes (an alias path, a second method). */
  also?: OperationRoute[]
  input: I
  /**
   * Who parses the input: the route, before the handler (the default: 400 from
   * `@quartet/core/validate`), or the handler itself, which then gets the request's params, query
   * and body unparsed (an app whose call styles share one argument schema and its wording of a
   * refusal, and which must refuse a caller's scope before the input). The schemas still
   * document the request either way.
   */
  inputParsedBy?: 'route' | 'handler'
  responses: R
  auth: AuthRequirement<Caller>
  /** Error codes the handler's use case can raise, beyond the auth requirement's. */
  errors: ErrorDocs
  /** Headers on every answer of the operation, errors included (set before auth runs). */
  headers?: Readonly<Record<string, string>>
  /** The JSON-RPC method name this operation is also served as (an adapter for it reads this). */
  rpc?: { method: string }
  /** The GraphQL field this operation is also served as. */
  graphql?: { kind: 'query' | 'mutation'; field: string }
  /**
   * A hot read: answered before express (see HotRead). Only a read may be: a GET, or a POST whose
   * answer needs no body. A JSON reply gets core's hot route (hotRoutesOf); a representation
   * (`respond`) gets the app's own answer, registered with answerHotRepresentation.
   */
  hot?: HotRead
  handler(input: ParsedInput<I>, ctx: OperationContext<Caller, Deps>): Promise<Result>
  /**
   * Writes the answer itself, for a representation that is not a JSON reply (a stored document
   * with its validators and encodings): the handler's result goes here instead of `res.json`.
   */
  respond?(result: Result, req: IncomingMessage, res: ServerResponse): void
}

/** What a registry holds: definitions of any input, output and caller, over one app's dependencies. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation<Deps = any> = OperationDefinition<InputSchemas, SuccessResponses, any, Deps, any>

/**
 * The app's `define`: binds its dependency type once, so every definition infers its own input,
 * responses and caller. A JSON operation returns a Reply; one with `respond` returns what that writes.
 */
export function operationsOver<Deps>() {
  return {
    define<const I extends InputSchemas, const R extends SuccessResponses, Caller>(
      definition: Omit<OperationDefinition<I, R, Caller, Deps>, 'respond'>,
    ): OperationDefinition<I, R, Caller, Deps> {
      return definition
    },
    defineRepresentation<const I extends InputSchemas, const R extends SuccessResponses, Caller, Result>(
      definition: OperationDefinition<I, R, Caller, Deps, Result> & {
        respond(result: Result, req: IncomingMessage, res: ServerResponse): void
      },
    ): OperationDefinition<I, R, Caller, Deps, Result> {
      return definition
    },
  }
}

// --- types a client uses --------------------------------------------------------------------------

type InputPart<S> = S extends z.ZodType ? z.input<S> : undefined

/** What a client sends: the path parameters, query and body as the schemas accept them. */
export type InputOf<O extends AnyOperation> = {
  [K in keyof O['input'] & ('params' | 'query' | 'body')]: InputPart<O['input'][K]>
}

/** The body of a success answer with `status` (default: every success status) as the client reads it. */
export type OutputOf<O extends AnyOperation, S extends keyof O['responses'] = keyof O['responses']> = {
  [K in S]: O['responses'][K] extends { schema: infer Z extends z.ZodType } ? z.output<Z> : undefined
}[S]

/** Every route the operation answers at, its main route first. */
export function routesOf(operation: Pick<AnyOperation, 'route' | 'also'>): OperationRoute[] {
  return [operation.route, ...(operation.also ?? [])]
}

/** The names must be unique: the OpenAPI operationId and the RPC method are looked up by them. */
export function assertUniqueNames(operations: readonly AnyOperation[]): void {
  const seen = new Set<string>()
  for (const op of operations) {
    if (seen.has(op.name)) throw new Error(`two operations are named ${op.name}`)
    seen.add(op.name)
  }
}

/**
 * The input of a call style without a URL (JSON-RPC params, GraphQL arguments): one flat object of
 * arguments, split into the operation's params, query and body by the keys of their schemas, and
 * each part parsed as the express route parses it (400 naming the field under `where`). Keys no
 * schema names go to the body (or, without one, the query), whose schema decides on them.
 */
export function parseCallArguments<O extends AnyOperation>(
  op: O,
  args: Record<string, unknown>,
  where = 'params',
): ParsedInput<O['input']> {
  const { params, query, body } = op.input as InputSchemas
  const keysOf = (schema: z.ZodType | undefined) =>
    schema instanceof ZodObject ? new Set(Object.keys(schema.shape as object)) : new Set<string>()
  const paramKeys = keysOf(params)
  const queryKeys = keysOf(query)
  const parts: Record<'params' | 'query' | 'body', Record<string, unknown>> = {
    params: {},
    query: {},
    body: {},
  }
  const rest = body ? 'body' : query ? 'query' : 'params'
  for (const [key, value] of Object.entries(args)) {
    const part = paramKeys.has(key) ? 'params' : queryKeys.has(key) ? 'query' : rest
    parts[part][key] = value
  }
  return {
    params: params ? parseInput(params, parts.params, where) : parts.params,
    query: query ? parseInput(query, parts.query, where) : parts.query,
    body: body ? parseInput(body, parts.body, where) : undefined,
  } as ParsedInput<O['input']>
}
