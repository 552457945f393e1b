import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import { type DomainDeps, PER_PAGE_MAX, VERSION } from './deps.ts'
import { normaliseHostname } from './names.ts'
import { RECORD_TYPES, TTL_DEFAULT, TTL_MAX, TTL_MIN } from './record-rules.ts'
import { iso, statusOf } from './views.ts'

/** Whether a name is registered here, and with which nameservers (any caller may ask of any name). */
export async function whois(
  deps: Pick<DomainDeps, 'zones' | 'subdomains' | 'records' | 'clock' | 'settings'>,
  _p: Principal,
  input: { domain: string },
) {
  const { settings } = deps
  const domain = normaliseHostname(input.domain, 'domain')
  const zones = await deps.zones.listZones()
  const zone = zones.find(
    (z) => domain.endsWith(`.${z.name}`) && !domain.slice(0, -(z.name.length + 1)).includes('.'),
  )
  if (!zone) throw new ApiError('not_found', `${domain} is not under a zone offered here`)
  const label = domain.slice(0, -(zone.name.length + 1))
  const base = { domain, rootdomain: zone.name }
  if (settings.reservedLabels.includes(label))
    return { whois: { ...base, status: 'reserved', created_at: null, expires_at: null, nameservers: [] } }
  const s = await deps.subdomains.findSubdomainByName(domain)
  if (!s)
    return {
      whois: { ...base, status: 'available', created_at: null, expires_at: null, nameservers: [] },
    }
  const ns = (await deps.records.listRecords(s.id))
    .filter((r) => r.state === 'active' && r.type === 'NS' && r.name === '@')
    .map((r) => r.content)
  return {
    whois: {
      ...base,
      status: statusOf(s, deps.clock.now(), settings.graceDays) === 'grace' ? 'grace' : 'registered',
      created_at: iso(s.createdAt),
      expires_at: s.expiresAt ? iso(s.expiresAt) : null,
      nameservers: ns.length ? ns : [...settings.nameservers],
    },
  }
}

export async function systemInfo(deps: Pick<DomainDeps, 'zones' | 'health' | 'provider' | 'settings'>) {
  const { settings } = deps
  const zones = await deps.zones.listZones()
  let database: 'ok' | 'unreachable' = 'ok'
  try {
    await deps.health.ping()
  } catch {
    database = 'unreachable'
  }
  return {
    system: {
      version: VERSION,
      provider: deps.provider.kind,
      zones: zones.map((z) => ({
        name: z.name,
        price_cents: z.priceCents,
        term_years: z.termYears,
        never_expires: z.termYears === 0,
      })),
      limits: {
        rate_limit_per_minute: settings.rateLimitPerMinute,
        rpc_max_batch: settings.rpcMaxBatch,
        ttl_min: TTL_MIN,
        ttl_max: TTL_MAX,
        ttl_default: TTL_DEFAULT,
        record_types: [...RECORD_TYPES],
        max_records_per_subdomain: settings.maxRecordsPerSubdomain,
        max_api_keys: settings.maxApiKeys,
        per_page_max: PER_PAGE_MAX,
        renew_window_days: settings.renewWindowDays,
        grace_days: settings.graceDays,
      },
      health: { database },
    },
  }
}
