import { IncomingMessage } from 'node:http'
import type { Request } from 'express'

/** The route template (`/api/v1/keys/:hash`), never the raw path: raw paths explode label cardinality. */
export function routeTemplate(req: Request): string {
  const template = (req as Request & { [ROUTE_TEMPLATE]?: string })[ROUTE_TEMPLATE]
  if (template !== undefined) return template
  if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') return req.path
  return 'unmatched'
}

const ROUTE_TEMPLATE = Symbol.for('quartet.routeTemplate')
const ROUTE = Symbol.for('quartet.route')
type Routed = IncomingMessage & { baseUrl?: string; [ROUTE]?: unknown; [ROUTE_TEMPLATE]?: string }

/**
 * A router restores `req.baseUrl` when an error (or `next()`) leaves it, so by `finish` a route
 * under `app.use('/api/v1', router)` that threw would read `/keys/:hash`, not `/api/v1/keys/:hash`.
 * Record the full template at the moment the router assigns `req.route`, while `baseUrl` is still
 * its own: through one accessor on the prototype every request shares (express's request
 * inherits from it), not one defined on each request, which would give every request its own
 * hidden class and keep request garbage alive through young-generation GCs (see log.ts).
 */
Object.defineProperty(IncomingMessage.prototype, 'route', {
  configurable: true,
  enumerable: false,
  get(this: Routed): unknown {
    return this[ROUTE]
  },
  set(this: Routed, value: { path?: unknown } | undefined) {
    this[ROUTE] = value
    this[ROUTE_TEMPLATE] =
      value && typeof value.path === 'string' ? `${this.baseUrl}${value.path}` : undefined
  },
})
