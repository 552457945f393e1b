import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import { ApiError } from '@quartet/core/errors'
import { HotAnswer, type HotRoute } from '@quartet/core/http'
import { jsonBytesOf, jsonWithHead } from '@quartet/core/json-text'
import { requestIp } from '@quartet/core/log'
import { Router, type Request, type RequestHandler } from 'express'
import type { Principal } from '../domain/use-cases.ts'
import type { Operation } from './operation.ts'
import { ONE_POINT, type Pipeline } from './pipeline.ts'

const PRINCIPAL = Symbol('principal')
type WithPrincipal = Request & { [PRINCIPAL]?: Principal }

/**
 * REST adapter: every operation at its resource URL (reads are GET with query parameters, writes
 * POST with a JSON body; PATCH/DELETE accepted where declared). Answers `{success:true, …output}`.
 */
export function restRouter(operations: readonly Operation[], pipeline: Pipeline): Router {
  const router = Router()
  const authenticate: RequestHandler = async (req, _res, next) => {
    ;(req as WithPrincipal)[PRINCIPAL] = await pipeline.authenticate(req.headers, req.ip)
    next()
  }
  for (const op of operations) {
    const handler: RequestHandler = async (req, res) => {
      const principal = (req as WithPrincipal)[PRINCIPAL]!
      setRateLimitHeaders(res, await pipeline.spend(principal))
      const body = req.body as unknown
      if (
        req.method !== 'GET' &&
        body !== undefined &&
        (typeof body !== 'object' || body === null || Array.isArray(body))
      )
        throw new ApiError('bad_request', 'the JSON body must be an object')
      const from = req.method === 'GET' ? req.query : ((body as Record<string, unknown> | undefined) ?? {})
      const output = await pipeline.run(op, principal, { ...from, ...req.params })
      if (op.rest.raw) {
        const raw = op.rest.raw(output as never)
        res.type(raw.contentType).send(raw.body)
        return
      }
      res.status(op.rest.status ?? 200).json({ success: true, ...(output as object) })
    }
    router[op.rest.method](op.rest.path, authenticate, handler)
    for (const alt of op.rest.also ?? []) router[alt.method](alt.path, authenticate, handler)
  }
  return router
}

/**
 * The REST reads clients poll, answered before express (core's hot routes): every read-only
 * operation with a plain JSON answer, at its exact path under each prefix — a GET with no query
 * string, or auth.verify's POST with no body. Each runs the same pipeline as the router above
 * (credentials, API switch, IP allow list, rate limit, validation) with the same headers and
 * envelope; anything else (a query, a trailing slash, a body, HEAD) goes on to express.
 */
export function restHotRoutes(
  operations: readonly Operation[],
  pipeline: Pipeline,
  prefixes: readonly string[],
): HotRoute[] {
  const routes: HotRoute[] = []
  for (const op of operations) {
    if (op.write || op.rest.raw || (op.rest.status ?? 200) !== 200) continue
    const method = op.rest.method === 'get' ? 'GET' : 'POST'
    for (const prefix of prefixes)
      routes.push({
        path: `${prefix}/rest${op.rest.path}`,
        method,
        async handle(req, headers, params) {
          // As app.ts sets for every answer of the three call styles, errors included.
          headers.setHeader('Cache-Control', 'no-store')
          const { principal, prepaid } = await pipeline.admit(req.headers, requestIp(req), ONE_POINT)
          setRateLimitHeaders(
            headers,
            await (prepaid ? pipeline.prepaid(prepaid) : pipeline.spend)(principal),
          )
          const output = await pipeline.run(op, principal, { ...params })
          // A cached view carries its JSON bytes: spliced in, not serialised again.
          if (jsonBytesOf(output) !== undefined)
            return new HotAnswer(200, undefined, jsonWithHead({ success: true }, output as object))
          return { success: true, ...(output as object) }
        },
      })
  }
  return routes
}
