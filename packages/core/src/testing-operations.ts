import type { Express } from 'express'
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
