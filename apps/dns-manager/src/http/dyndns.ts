import { DEPENDENCY_RETRY_AFTER_SECONDS, toApiError } from '@quartet/core/errors'
import { Router, type Request, type Response } from 'express'
import { z } from 'zod'
import type { AuditEntry } from '../domain/ports.ts'
import { dyndnsAddresses, MAX_DYNDNS_HOSTS } from '../domain/dyndns.ts'
import type { UseCases } from '../domain/use-cases.ts'
import { basicCredentials } from './basic-auth.ts'
import type { Pipeline } from './pipeline.ts'

/**
 * `GET /nic/update?hostname=<fqdn>[,<fqdn>…]&myip=<v4>[,<v6>]` (also `myipv6`; no address = the
 * caller's), HTTP Basic auth with an API key and secret or an update-only credential: the dyndns2
 * protocol. Answers are plain text, one line per host name, with the status codes its clients
 * act on (README, Dynamic DNS): inadyn accepts only a 2xx with good/nochg; ddclient reads the
 * codes of a 200 and reports any other status as a failure to retry later.
 */
export const ZDyndnsQuery = z.object({
  hostname: z.string().max(4096).optional(),
  myip: z.string().max(200).optional(),
  myipv6: z.string().max(200).optional(),
  // Accepted and ignored, as deSEC does: old DynDNS options.
  wildcard: z.string().optional(),
  mx: z.string().optional(),
  backmx: z.string().optional(),
  offline: z.string().optional(),
  system: z.string().optional(),
})

export function dyndnsRouter(deps: {
  useCases: UseCases
  pipeline: Pipeline
  allowPrivateAddresses: boolean
  audit: (entry: AuditEntry) => Promise<void>
}): Router {
  const router = Router()
  const answer = (res: Response, status: number, body: string, headers: Record<string, string> = {}) => {
    res
      .status(status)
      .set({ 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store', ...headers })
    res.send(`${body}\n`)
  }

  async function update(req: Request, res: Response) {
    let principal
    try {
      principal = await deps.useCases.authenticateDyndns(basicCredentials(req.headers.authorization), req.ip)
      await deps.pipeline.spend(principal)
    } catch (err) {
      const e = toApiError(err)
      switch (e.code) {
        case 'auth_invalid_credentials':
          return answer(res, 401, 'badauth', {
            'WWW-Authenticate': 'Basic realm="dns-manager", charset="UTF-8"',
          })
        case 'api_access_disabled':
        case 'auth_ip_not_allowed':
        case 'credential_scope_forbidden':
          return answer(res, 403, 'badauth')
        case 'rate_limit_exceeded':
          return answer(res, 429, 'abuse', e.headers ?? {})
        case 'service_unavailable':
          return answer(
            res,
            503,
            '911',
            e.headers ?? { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_SECONDS) },
          )
        default:
          req.log.error({ err }, 'dyndns authentication failed')
          return answer(res, 500, '911')
      }
    }
    const query = ZDyndnsQuery.safeParse(req.query)
    const hostnames = (query.success ? (query.data.hostname ?? '') : '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean)
    if (!query.success || hostnames.length === 0) return answer(res, 200, 'notfqdn')
    if (hostnames.length > MAX_DYNDNS_HOSTS) return answer(res, 200, 'numhost')
    let addresses
    try {
      addresses = dyndnsAddresses(query.data, req.ip, deps.allowPrivateAddresses)
    } catch (err) {
      // Not a code of the protocol: clients report the status and the line as a failure.
      return answer(res, 400, `badip ${toApiError(err).message}`)
    }
    try {
      const results = await deps.useCases.dyndnsUpdate(principal, hostnames, addresses)
      const lines = results.map((r) => (r.addresses.length ? `${r.code} ${r.addresses.join(',')}` : r.code))
      const changed = results.filter((r) => r.code !== 'nochg' && r.code !== 'nohost' && r.code !== 'notfqdn')
      if (changed.length)
        await deps
          .audit({
            accountId: principal.accountId,
            credentialId: principal.credentialId,
            ip: principal.ip ?? null,
            operation: 'dyndns.update',
            target: changed
              .map((r) => r.hostname)
              .join(',')
              .slice(0, 500),
            outcome: changed.map((r) => r.code).join(','),
          })
          .catch(() => {})
      if (results.some((r) => r.code === '911'))
        return answer(res, 503, lines.join('\n'), { 'Retry-After': '30' })
      return answer(res, 200, lines.join('\n'))
    } catch (err) {
      const e = toApiError(err)
      if (e.code === 'service_unavailable') return answer(res, 503, '911', e.headers ?? {})
      req.log.error({ err }, 'dyndns update failed')
      return answer(res, 500, '911')
    }
  }

  router.get('/nic/update', update)
  router.post('/nic/update', update)
  return router
}
