import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Express } from 'express'
import { answersBeforeExpressOnly, serverFor } from './http/app-state.ts'
import { type ErrorCode, statusOf } from './errors.ts'
import { type AnyOperation, routesOf } from './operation.ts'
import { readReply } from './operation-client.ts'

/**
 * Test helpers for apps defined by operations: which routes the express app serves that no
 * operation defines (a route added by hand, beside the definitions), and a check of a real answer
 * against the output schema its operation documents.
 */
export interface ExpressRoute {
  /** Lower case; `all` for app.all. */
  method: string
  path: string
}

/** The routes core's app builder serves itself (not API operations of the app). */
export const CORE_ROUTES: readonly string[] = ['/healthz', '/readyz', '/metrics', '/openapi.json']

interface Layer {
  name?: string
  rawPath?: string
  route?: { path: string; methods: Record<string, boolean> }
  handle?: { stack?: Layer[] }
}

/** Every route registered on the app (app.get/post/…/all, and in routers it mounts), in order. */
export function expressRoutesOf(app: Express): ExpressRoute[] {
  const routes: ExpressRoute[] = []
  const walk = (stack: readonly Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const methods = Object.keys(layer.route.methods)
        // app.all registers the route under every method node knows.
        for (const method of methods.length > 10 ? ['all'] : methods)
          routes.push({ method, path: prefix + layer.route.path })
      } else if (layer.name === 'router' && layer.handle?.stack) {
        walk(layer.handle.stack, prefix + (layer.rawPath ?? ''))
      }
    }
  }
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '')
  return routes
}

/**
 * The app's routes that no operation defines, except core's own and `allowed` (the app's routes
 * that are not API operations, such as a preflight answer; say why where you list them).
 */
export function routesWithoutOperation(
  app: Express,
  operations: readonly AnyOperation[],
  allowed: ReadonlyArray<ExpressRoute> = [],
): ExpressRoute[] {
  const defined = new Set(operations.flatMap((op) => routesOf(op).map((r) => `${r.method} ${r.path}`)))
  const exempt = new Set(allowed.map((r) => `${r.method} ${r.path}`))
  return expressRoutesOf(app).filter(
    (r) =>
      !CORE_ROUTES.includes(r.path) &&
      !defined.has(`${r.method} ${r.path}`) &&
      !exempt.has(`${r.method} ${r.path}`),
  )
}

/** The operations none of whose routes the app serves (defined, but never mounted). */
export function operationsWithoutRoute(app: Express, operations: readonly AnyOperation[]): string[] {
  const served = new Set(expressRoutesOf(app).map((r) => `${r.method} ${r.path}`))
  return operations
    .filter((op) => !routesOf(op).every((r) => served.has(`${r.method} ${r.path}`)))
    .map((op) => op.name)
}

/**
 * A real answer, checked against its operation: the status must be one of its documented success
 * statuses and the body must parse with that status's output schema (the zod error says where not).
 */
export function expectDocumentedAnswer(op: AnyOperation, answer: { status: number; body: unknown }): unknown {
  return readReply(op, answer.status, answer.body)
}

/**
 * The statuses an operation documents for its errors: those of the codes it and its auth
 * requirement declare, and validation's 400 when it takes input.
 */
export function documentedErrorStatuses(op: AnyOperation): number[] {
  const codes = [...Object.keys(op.auth.errors), ...Object.keys(op.errors)] as ErrorCode[]
  if (op.input.params || op.input.query || op.input.body) codes.push('bad_request')
  return [...new Set(codes.map(statusOf))].sort((a, b) => a - b)
}

/** A real error answer of the operation: its status must be one the operation documents. */
export function expectDocumentedError(op: AnyOperation, answer: { status: number }): void {
  const documented = documentedErrorStatuses(op)
  if (!documented.includes(answer.status))
    throw new Error(
      `${op.name} answered ${answer.status}, which it does not document (${documented.join(', ')})`,
    )
}

/** A request to a hot read: a concrete path of its route (under a prefix where the app has one). */
export interface HotReadExample {
  operation: string
  path: string
  /** The operation's route method unless given (a representation's HEAD, say). */
  method?: string
  headers?: Record<string, string>
}

export interface HotReadAnswer {
  operation: string
  path: string
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** Headers two equal answers may still differ in: the date, the connection's, a rate limit's count. */
const VARYING = /^(date|connection|keep-alive|(x-)?ratelimit-(remaining|reset))$/i

/**
 * The generic proof that a hot read's fast answer is its ordinary one (operation.ts, HotRead):
 * every example is sent on a real connection once to the answers asked before express alone and
 * once to express alone, with the same X-Request-Id, and both answers come back (headers but the
 * varying ones) for the test to compare: `expect(hot).toEqual(express)`. It throws when a hot
 * operation has no example, when an example names an operation that is not hot, or when the
 * answers before express left an example to express (so no hot read can go unproven or be
 * proven by express answering twice). Examples run in order, each pair one after the other.
 */
export async function hotReadAnswers(
  app: Express,
  operations: readonly AnyOperation[],
  examples: readonly HotReadExample[],
): Promise<{ hot: HotReadAnswer[]; express: HotReadAnswer[] }> {
  const hotOps = new Map(operations.filter((op) => op.hot).map((op) => [op.name, op]))
  const unproven = [...hotOps.keys()].filter((name) => !examples.some((e) => e.operation === name))
  if (unproven.length) throw new Error(`hot reads without an example request: ${unproven.join(', ')}`)
  const hotOnly = await listening(
    serverFor(
      app,
      answersBeforeExpressOnly(app, (_req, res) => {
        res.statusCode = 599
        res.end('left to express')
      }),
    ),
  )
  const expressOnly = await listening(serverFor(app, app as never))
  const answers = { hot: [] as HotReadAnswer[], express: [] as HotReadAnswer[] }
  try {
    for (const [i, example] of examples.entries()) {
      const op = hotOps.get(example.operation)
      if (!op) throw new Error(`${example.operation} is not a hot read of this app`)
      const method = (example.method ?? op.route.method).toUpperCase()
      const headers = { ...example.headers, 'X-Request-Id': `hot-read-${i}` }
      const hot = await send(hotOnly.url, method, example, headers)
      if (hot.status === 599)
        throw new Error(`${method} ${example.path} (${example.operation}) was not answered before express`)
      answers.hot.push(hot)
      answers.express.push(await send(expressOnly.url, method, example, headers))
    }
  } finally {
    await Promise.all([hotOnly.close(), expressOnly.close()])
  }
  return answers
}

async function listening(server: ReturnType<typeof serverFor>) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function send(
  url: string,
  method: string,
  example: HotReadExample,
  headers: Record<string, string>,
): Promise<HotReadAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${example.path}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('error', reject)
      res.on('end', () =>
        resolve({
          operation: example.operation,
          path: example.path,
          status: res.statusCode!,
          headers: comparable(res.headers),
          // Compressed bodies as base64: compared byte for byte.
          body: Buffer.concat(chunks).toString(res.headers['content-encoding'] ? 'base64' : 'utf8'),
        }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

function comparable(headers: IncomingHttpHeaders): HotReadAnswer['headers'] {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !VARYING.test(name)))
}
