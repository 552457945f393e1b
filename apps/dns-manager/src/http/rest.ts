import { setRateLimitHeaders } from '@quartet/core/rate-limit'
import type { HeaderSink, HotRoute } from '@quartet/core/http'
import { resolveWith } from '@quartet/core/operation'
import { hotRoutesOf, type MountOptions, mountOperations } from '@quartet/core/operation/express'
import { requestIp } from '@quartet/core/log'
import type { Router } from 'express'
import type { IncomingMessage } from 'node:http'
import type { Principal } from '../domain/use-cases.ts'
import { acmeCredential, apiCredential, type DnsOperation as Operation, type RestDeps } from './define.ts'
import { ONE_POINT, type Pipeline } from './pipeline.ts'

/**
 * REST: every operation at its route under `/rest` (core's mountOperations; reads are GET with
 * query parameters, writes POST with a JSON body, PATCH/DELETE accepted where declared),
 * on a router the app mounts under each prefix. The caller is authenticated and spends one
 * rate-limit point before the input is looked at; the answer is `{success:true, …output}`.
 */
export function mountRest(target: Router, operations: readonly Operation[], pipeline: Pipeline): void {
  mountOperations(target, operations, restServing(pipeline))
}

/**
 * The REST reads clients poll, answered before express: the operations defined `hot`
 * (operations/*.ts), each at its exact path under each prefix, by core's hot routes with the
 * same serving as the router above, so the answers are the router's.
 */
export function restHotRoutes(
  operations: readonly Operation[],
  pipeline: Pipeline,
  prefixes: readonly string[],
): HotRoute[] {
  return hotRoutesOf(operations, { ...restServing(pipeline), prefixes })
}

/**
 * What REST serves operations with: the pipeline's one call, and the caller admitted with the
 * REST call's one rate-limit point spent in authentication's own kv command where it can be
 * (pipeline.admit), its decision in the RateLimit headers.
 */
function restServing(pipeline: Pipeline): MountOptions<RestDeps> {
  const caller = async (req: IncomingMessage, headers: HeaderSink): Promise<Principal> => {
    const { principal, prepaid } = await pipeline.admit(req.headers, requestIp(req), ONE_POINT)
    setRateLimitHeaders(headers, await (prepaid ? pipeline.prepaid(prepaid) : pipeline.spend)(principal))
    return principal
  }
  return {
    deps: { run: pipeline.run },
    auth: [resolveWith(apiCredential, caller), resolveWith(acmeCredential, caller)],
  }
}
