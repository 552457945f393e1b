import type { IncomingMessage } from 'node:http'
import type { Express, RequestHandler, Router } from 'express'
import { answerBeforeExpress, HotAnswer, type HeaderSink, type HotRoute } from './http.ts'
import type { FirstAnswer } from './http/app-state.ts'
import { jsonBytesOf } from './json-text.ts'
import {
  type AnyOperation,
  type AuthBinding,
  type AuthResolver,
  assertUniqueNames,
  routesOf,
} from './operation.ts'
import { type ParsedInput, parseInput, validate } from './validate.ts'

/**
 * Serving operations: each definition becomes an express route (headers → auth → validation →
 * handler → reply), and a `hot` one also a core hot route with the same steps, so both ways
 * answer with the same headers, body and errors. Errors are thrown, and the app's error
 * envelope (createHttpApp's errorMiddleware, or the hot route's) renders them unchanged.
 */
export interface MountOptions<Deps> {
  deps: Deps
  /** How the app resolves each auth requirement its operations name (core's publicAccess needs none). */
  auth: ReadonlyArray<AuthBinding<unknown>>
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Resolvers = Map<string, AuthResolver<any>>

function resolversOf(bindings: ReadonlyArray<AuthBinding<unknown>>): Resolvers {
  const resolvers: Resolvers = new Map([['public', () => undefined]])
  for (const binding of bindings) resolvers.set(binding.requirement.name, binding.resolve)
  return resolvers
}

function resolverOf(resolvers: Resolvers, op: AnyOperation): AuthResolver<unknown> {
  const resolve = resolvers.get(op.auth.name)
  // At mount, not at the first request: an operation nobody can resolve is a wiring bug.
  if (!resolve)
    throw new Error(`operation ${op.name} needs auth "${op.auth.name}", which the app does not resolve`)
  return resolve
}

function setHeaders(headers: HeaderSink, op: AnyOperation): void {
  if (op.headers) for (const name in op.headers) headers.setHeader(name, op.headers[name]!)
}

/** The express handler of one operation at one route. */
export function operationHandler<Deps>(
  op: AnyOperation<Deps>,
  resolve: AuthResolver<unknown>,
  deps: Deps,
): RequestHandler {
  const parsedByRoute = op.inputParsedBy !== 'handler'
  const check =
    parsedByRoute && (op.input.params || op.input.query || op.input.body) ? validate(op.input) : undefined
  return async (req, res) => {
    setHeaders(res, op)
    const caller = await resolve(req, res)
    // validate throws its 400 or calls back at once: it is a check here, not a step that waits.
    if (check) check(req, res, () => {})
    const input = { params: req.params, query: req.query, body: req.body } as ParsedInput<typeof op.input>
    const result = await op.handler(input, { caller, deps, headers: res, req })
    if (op.respond) op.respond(result, req, res)
    else {
      // res.json: the bytes the apps sent before they were defined as operations.
      const reply = result as { status: number; body: unknown }
      if (reply.body === undefined) res.status(reply.status).end()
      else res.status(reply.status).json(reply.body)
    }
  }
}

/** Mounts every operation at each of its routes (on the app, or on a router the app mounts under a prefix). */
export function mountOperations<Deps>(
  app: Express | Router,
  operations: ReadonlyArray<AnyOperation<Deps>>,
  options: MountOptions<Deps>,
): void {
  assertUniqueNames(operations)
  const resolvers = resolversOf(options.auth)
  for (const op of operations) {
    const handler = operationHandler(op, resolverOf(resolvers, op), options.deps)
    for (const route of routesOf(op)) (app as Router)[route.method](route.path, handler)
  }
}

/**
 * The hot routes of the operations with a HotRead: each answers its exact main route before
 * express (core's HotRoute: no query string, no body), under each of `prefixes` (the paths the
 * app mounts the operations' router at; default: the app itself), with the steps of its express
 * route, which still serves everything else at the path (HEAD, a query, a trailing slash, a body).
 */
export function hotRoutesOf<Deps>(
  operations: ReadonlyArray<AnyOperation<Deps>>,
  options: MountOptions<Deps> & { prefixes?: readonly string[] },
): HotRoute[] {
  const resolvers = resolversOf(options.auth)
  return operations
    .filter((op) => op.hot && !op.respond)
    .flatMap((op) => {
      const handle = hotHandler(op, resolverOf(resolvers, op), options.deps)
      return (options.prefixes ?? ['']).map((prefix): HotRoute => ({
        path: `${prefix}${op.route.path}`,
        method: op.route.method === 'get' ? 'GET' : 'POST',
        handle,
      }))
    })
}

/**
 * The hot answer of a representation (a hot operation with `respond`: a stored document with its
 * validators and encodings, which a hot route's JSON answer cannot be): the app's own answer,
 * registered before express for that operation. It must answer as the operation's express
 * route does, and hotReadAnswers proves it as it proves the hot routes.
 */
export function answerHotRepresentation(app: Express, op: AnyOperation, answer: FirstAnswer): void {
  if (!op.hot || !op.respond)
    throw new Error(`operation ${op.name} is not a hot representation (hot, with respond)`)
  answerBeforeExpress(app, answer)
}

function hotHandler<Deps>(
  op: AnyOperation<Deps>,
  resolve: AuthResolver<unknown>,
  deps: Deps,
): HotRoute['handle'] {
  if (op.route.method !== 'get' && op.route.method !== 'post')
    throw new Error(
      `operation ${op.name} cannot be hot: only a GET or a body-less POST is answered before express`,
    )
  const parsedByRoute = op.inputParsedBy !== 'handler'
  if (parsedByRoute && op.input.body) throw new Error(`operation ${op.name} cannot be hot: it takes a body`)
  const { params: paramsSchema, query: querySchema } = op.input
  // What express hands the route for a request without a query string or a body: an empty
  // query (parsed by its schema where the route parses), no body.
  const query = (): unknown => (parsedByRoute && querySchema ? parseInput(querySchema, {}, 'query') : {})
  return async (req: IncomingMessage, headers: HeaderSink, params: Record<string, string>) => {
    setHeaders(headers, op)
    const caller = await resolve(req, headers)
    const input = {
      params: parsedByRoute && paramsSchema ? parseInput(paramsSchema, params, 'params') : params,
      query: query(),
      body: undefined,
    } as ParsedInput<typeof op.input>
    const reply = (await op.handler(input, { caller, deps, headers, req })) as {
      status: number
      body: unknown
    }
    // A body that keeps its JSON (json-text.ts) is sent as those bytes; res.json makes the same.
    const kept = jsonBytesOf(reply.body)
    if (kept !== undefined) return new HotAnswer(reply.status, undefined, kept)
    return reply.status === 200 && reply.body !== undefined
      ? reply.body
      : new HotAnswer(reply.status, reply.body)
  }
}
