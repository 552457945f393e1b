import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import { DAY_MS, type DomainDeps, PER_PAGE_DEFAULT } from './deps.ts'
import { MAX_NAME_LENGTH, normaliseLabel } from './names.ts'
import type { RecordFields, SubdomainListRow, SubdomainRow, ZoneRow } from './ports.ts'
import { bindZoneFile, bindZoneFileInRoot } from './zone-file.ts'
import { releaseSubdomain, type SyncDeps } from './sync.ts'
import {
  addYears,
  afterId,
  asValues,
  cursorOf,
  iso,
  type Page,
  statusTurnsAt,
  subdomainView,
} from './views.ts'

type SubdomainDeps = Pick<DomainDeps, 'subdomains' | 'clock' | 'settings'>

export async function ownSubdomain(
  deps: Pick<DomainDeps, 'subdomains'>,
  p: Principal,
  id: number,
): Promise<SubdomainRow> {
  const s = await deps.subdomains.getSubdomain(p.accountId, id)
  if (!s) throw subdomainNotFound(id)
  return s
}

export const subdomainNotFound = (id: number) =>
  new ApiError('subdomain_not_found', `no subdomain ${id} on this account`)

const view = (deps: Pick<DomainDeps, 'clock' | 'settings'>, s: SubdomainListRow) =>
  subdomainView(s, deps.clock.now(), deps.settings.graceDays)

/** A page of the account's subdomains; kept in the views cache until a write, or a status turns. */
export function listSubdomains(
  deps: SubdomainDeps & Pick<DomainDeps, 'views'>,
  p: Principal,
  input: Page & { rootdomain?: string | undefined; search?: string | undefined },
) {
  const limit = input.per_page ?? PER_PAGE_DEFAULT
  const options = {
    afterId: afterId(input.cursor),
    limit: limit + 1,
    rootdomain: input.rootdomain?.toLowerCase(),
    search: input.search?.toLowerCase(),
  }
  const key = `subdomains ${options.afterId} ${limit} ${JSON.stringify([options.rootdomain, options.search])}`
  return deps.views.read(p.accountId, p.viewToken ?? null, key, async () => {
    const rows = await deps.subdomains.listSubdomains(p.accountId, options)
    const page = rows.slice(0, limit)
    const now = deps.clock.now()
    let validUntil = Infinity
    for (const s of page) validUntil = Math.min(validUntil, statusTurnsAt(s, now, deps.settings.graceDays))
    return {
      value: {
        subdomains: page.map((s) => subdomainView(s, now, deps.settings.graceDays)),
        next_cursor: rows.length > limit ? cursorOf(page.at(-1)?.id) : null,
      },
      validUntil,
    }
  })
}

export async function getSubdomain(deps: SubdomainDeps, p: Principal, input: { id: number }) {
  return { subdomain: view(deps, await ownSubdomain(deps, p, input.id)) }
}

export async function createSubdomain(
  deps: SubdomainDeps & Pick<DomainDeps, 'zones'>,
  p: Principal,
  input: { subdomain: string; rootdomain: string },
) {
  const { settings } = deps
  const label = normaliseLabel(input.subdomain)
  if (settings.reservedLabels.includes(label))
    throw new ApiError('bad_request', `subdomain: ${label} is reserved`, {
      field: 'subdomain',
      reserved: true,
    })
  const zone = await deps.zones.findZone(input.rootdomain.trim().toLowerCase().replace(/\.$/, ''))
  if (!zone)
    throw new ApiError('bad_request', `rootdomain: ${input.rootdomain} is not offered here`, {
      field: 'rootdomain',
    })
  const fullDomain = `${label}.${zone.name}`
  if (fullDomain.length > MAX_NAME_LENGTH)
    throw new ApiError(
      'bad_request',
      `subdomain: the full name must be at most ${MAX_NAME_LENGTH} characters`,
      {
        field: 'subdomain',
      },
    )
  const neverExpires = zone.termYears === 0
  const result = await deps.subdomains.createSubdomain({
    accountId: p.accountId,
    zone,
    label,
    fullDomain,
    neverExpires,
    expiresAt: neverExpires ? null : addYears(deps.clock.now(), zone.termYears),
  })
  if (result.ok) return { subdomain: view(deps, result.subdomain) }
  switch (result.reason) {
    case 'quota':
      throw new ApiError('quota_exceeded', `the subdomain quota of ${result.total} is used up`, {
        used: result.used,
        total: result.total,
        available: 0,
      })
    case 'balance':
      throw new ApiError('insufficient_balance', 'the balance does not cover the zone price', {
        balance: result.balance,
        required: result.required,
      })
    case 'taken':
      throw new ApiError('subdomain_taken', `${fullDomain} is already registered`, {
        full_domain: fullDomain,
      })
  }
}

export async function renewSubdomain(deps: SubdomainDeps, p: Principal, input: { id: number }) {
  const now = deps.clock.now()
  const windowMs = deps.settings.renewWindowDays * DAY_MS
  const graceMs = deps.settings.graceDays * DAY_MS
  const renewed = await deps.subdomains.renewSubdomain(
    p.accountId,
    input.id,
    (s: SubdomainRow, zone: ZoneRow) => {
      if (s.neverExpires || !s.expiresAt)
        throw new ApiError('bad_request', `${s.fullDomain} never expires and needs no renewal`, {
          field: 'id',
        })
      const opens = new Date(s.expiresAt.getTime() - windowMs)
      if (now < opens)
        throw new ApiError('renewal_not_yet_available', `renewal opens ${iso(opens)}`, {
          window_opens_at: iso(opens),
          seconds_until_window: Math.ceil((opens.getTime() - now.getTime()) / 1000),
        })
      const graceEnds = new Date(s.expiresAt.getTime() + graceMs)
      if (now >= graceEnds)
        throw new ApiError('renewal_window_expired', `the grace period ended ${iso(graceEnds)}`, {
          grace_ended_at: iso(graceEnds),
        })
      const from = s.expiresAt > now ? s.expiresAt : now
      return { expiresAt: addYears(from, zone.termYears), priceCents: zone.priceCents }
    },
    (balance, required) =>
      new ApiError('insufficient_balance', 'the balance does not cover the renewal', { balance, required }),
  )
  if (!renewed) throw new ApiError('subdomain_not_found', `no subdomain ${input.id} on this account`)
  return {
    subdomain: view(deps, renewed.subdomain),
    charged_cents: renewed.charged,
    balance_cents: renewed.balance,
  }
}

/** Answers once nothing is served at or under the name any more (sync.ts, releaseSubdomain). */
export async function deleteSubdomain(deps: SyncDeps, p: Principal, input: { id: number }) {
  const s = await releaseSubdomain(deps, { accountId: p.accountId, id: input.id })
  return { deleted: true as const, id: s.id }
}

export async function exportZone(
  deps: Pick<DomainDeps, 'subdomains' | 'records' | 'clock' | 'settings'>,
  p: Principal,
  input: { id: number },
) {
  const s = await ownSubdomain(deps, p, input.id)
  const records = (await deps.records.listRecords(s.id))
    .map((r) =>
      r.state === 'pending_create' ? null : r.state === 'pending_update' && r.previous ? r.previous : r,
    )
    .filter((r): r is RecordFields => r !== null)
    .map(asValues)
  const serial = Math.floor(s.updatedAt.getTime() / 1000)
  const options = { nameservers: deps.settings.nameservers, serial }
  const apexAlias = records.some((r) => r.name === '@' && r.type === 'CNAME')
  return {
    zone: apexAlias
      ? bindZoneFileInRoot(s.fullDomain, s.rootdomain, records, options)
      : bindZoneFile(s.fullDomain, records, options),
    /** The zone the file is of: the subdomain, or its root zone when the subdomain is a CNAME. */
    origin: apexAlias ? s.rootdomain : s.fullDomain,
    generated_at: iso(deps.clock.now()),
  }
}
