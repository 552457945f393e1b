import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import { type HeaderSink, HotAnswer, type HotRoute } from '@quartet/core/http'
import { resolveWith } from '@quartet/core/operation'
import { mountOperations } from '@quartet/core/operation/express'
import { jsonBytesOf, jsonWithHead } from '@quartet/core/json-text'
import { requestIp } from '@quartet/core/log'
import type { Request, Router } from 'express'
import type { IncomingMessage } from 'node:http'
import type { Principal } from '../domain/use-cases.ts'
import { acmeCredential, apiCredential, type DnsOperation as Operation } from './define.ts'
import { ONE_POINT, type Pipeline } from './pipeline.ts'

/**
 * REST: every operation at its route under `/rest` (core's mountOperations; reads are GET with
 * query parameters, writes POST with a JSON body, PATCH/DELETE accepted where declared),
 * on a router the app mounts under each prefix. The caller is authenticated and spends one
 * rate-limit point before the input is looked at; the answer is `{success:true, …output}`.
 */
export function mountRest(target: Router, operations: readonly Operation[], pipeline: Pipeline): void {
  const caller = async (req: IncomingMessage, headers: HeaderSink): Promise<Principal> => {
    const principal = await pipeline.authenticate(req.headers, (req as Request).ip)
    setRateLimitHeaders(headers, await pipeline.spend(principal))
    return principal
  }
  mountOperations(target, operations, {
    deps: { run: pipeline.run },
    auth: [resolveWith(apiCredential, caller), resolveWith(acmeCredential, caller)],
  })
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
    if (op.write || op.raw || op.status !== 200) continue
    const method = op.route.method === 'get' ? 'GET' : 'POST'
    for (const prefix of prefixes)
      routes.push({
        path: `${prefix}${op.route.path}`,
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
