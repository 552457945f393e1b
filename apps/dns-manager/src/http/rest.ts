import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import { ApiError } from '@quartet/core/errors'
import { Router, type Request, type RequestHandler } from 'express'
import type { Principal } from '../domain/service.ts'
import type { Operation } from './operation.ts'
import type { Pipeline } from './pipeline.ts'

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
