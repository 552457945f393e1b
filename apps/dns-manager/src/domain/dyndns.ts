import { ApiError, toApiError } from '@quartet/core/errors'
import ipaddr from 'ipaddr.js'
import type { Principal } from './principal.ts'
import { createRecord, deleteRecord, updateRecord } from './dns-records.ts'
import type { DomainDeps } from './deps.ts'
import { normaliseRecordName, normaliseTarget, ownerLabelOf } from './names.ts'
import { TTL_MIN, validateAddress } from './record-rules.ts'
import type { SyncDeps } from './sync.ts'

/**
 * Dynamic DNS, the dyndns2 protocol (DynDNS's /nic/update, which ddclient, inadyn and most
 * routers speak): set the address records of host names to the caller's addresses. An update
 * that changes nothing answers `nochg` from the database alone; the upstream sees only changes.
 */

export type DyndnsCode = 'good' | 'nochg' | 'nohost' | 'notfqdn' | 'numhost' | 'dnserr' | '911'

export interface DyndnsResult {
  hostname: string
  code: DyndnsCode
  /** The addresses the host name now has (for good/nochg). */
  addresses: string[]
}

/** More host names in one request is `numhost` (the protocol's limit). */
export const MAX_DYNDNS_HOSTS = 20

type DyndnsDeps = SyncDeps & Pick<DomainDeps, 'zones'>

/** The addresses of a request, validated like A/AAAA content: `badip` when one is not usable. */
export function dyndnsAddresses(
  given: { myip?: string | undefined; myipv6?: string | undefined },
  callerIp: string | undefined,
  allowPrivate: boolean,
): { ipv4?: string; ipv6?: string } {
  const raw = [...(given.myip ?? '').split(','), ...(given.myipv6 ?? '').split(',')]
    .map((s) => s.trim())
    .filter(Boolean)
  if (raw.length === 0 && callerIp) raw.push(callerIp)
  const out: { ipv4?: string; ipv6?: string } = {}
  for (const ip of raw) {
    const kind = ipaddr.isValid(ip) ? ipaddr.process(ip).kind() : null
    if (kind === 'ipv4') out.ipv4 = validateAddress('A', ipaddr.process(ip).toString(), allowPrivate)
    else if (kind === 'ipv6') out.ipv6 = validateAddress('AAAA', ip, allowPrivate)
    else throw new ApiError('bad_request', `myip: ${ip} is not an IP address`, { field: 'myip' })
  }
  if (!out.ipv4 && !out.ipv6) throw new ApiError('bad_request', 'myip: no address to set', { field: 'myip' })
  return out
}

/**
 * Sets each host name's A (and/or AAAA) RRset to the one address given. A host name is a
 * subdomain of the account (or a name inside one); an update-only credential reaches only its
 * own subdomain. Each change is an ordinary record write (pending, pushed, confirmed; 911 when
 * the upstream fails).
 */
export async function dyndnsUpdate(
  deps: DyndnsDeps,
  p: Principal,
  hostnames: string[],
  addresses: { ipv4?: string; ipv6?: string },
): Promise<DyndnsResult[]> {
  const zones = (await deps.zones.listZones()).map((z) => z.name)
  const results: DyndnsResult[] = []
  for (const raw of hostnames) {
    const hostname = raw.trim().toLowerCase().replace(/\.$/, '')
    results.push({ hostname: raw, ...(await updateHost(deps, p, zones, hostname, addresses)) })
  }
  return results
}

async function updateHost(
  deps: DyndnsDeps,
  p: Principal,
  zones: string[],
  hostname: string,
  addresses: { ipv4?: string; ipv6?: string },
): Promise<{ code: DyndnsCode; addresses: string[] }> {
  try {
    normaliseTarget(hostname, 'hostname', 'domain')
  } catch {
    return { code: 'notfqdn', addresses: [] }
  }
  const zone = zones.find((z) => ownerLabelOf(z, hostname) !== null)
  const label = zone && ownerLabelOf(zone, hostname)
  const s = label ? await deps.subdomains.findSubdomainByName(`${label}.${zone}`) : null
  if (
    !s ||
    s.accountId !== p.accountId ||
    s.state !== 'active' ||
    (p.scope !== 'full' && p.scopeSubdomainId !== s.id)
  )
    return { code: 'nohost', addresses: [] }
  let name: string
  try {
    name = normaliseRecordName(`${hostname}.`, s.fullDomain)
  } catch {
    return { code: 'notfqdn', addresses: [] }
  }
  let changed = false
  try {
    for (const [type, ip] of [
      ['A', addresses.ipv4],
      ['AAAA', addresses.ipv6],
    ] as const) {
      if (!ip) continue
      const rows = (await deps.records.listRecords(s.id)).filter(
        (r) => r.name === name && r.type === type && r.state !== 'pending_create',
      )
      if (rows.length === 1 && rows[0]!.content === ip && rows[0]!.state === 'active') continue
      changed = true
      const [first, ...rest] = rows
      if (first) await updateRecord(deps, p, { subdomain_id: s.id, id: first.id, content: ip })
      else await createRecord(deps, p, { subdomain_id: s.id, type, name, content: ip, ttl: TTL_MIN })
      for (const extra of rest) await deleteRecord(deps, p, { subdomain_id: s.id, id: extra.id })
    }
  } catch (err) {
    const e = toApiError(err)
    if (e.code === 'bad_request') return { code: 'dnserr', addresses: [] }
    if (e.code === 'provider_operation_failed' || e.code === 'service_unavailable' || e.code === 'conflict')
      return { code: '911', addresses: [] }
    throw err
  }
  const set = [addresses.ipv4, addresses.ipv6].filter((x): x is string => !!x)
  return { code: changed ? 'good' : 'nochg', addresses: set }
}
