import { DAY_MS, type DomainDeps } from './deps.ts'
import { fqdnOf, ownerLabelOf } from './names.ts'
import type { OwnerStamp, RRsetKey } from './ports.ts'
import type { ServedRRset } from './provider.ts'
import { desiredOfSubdomain, desiredRRset, rrsetKey, sameRRset, splitKey } from './rrset-comparison.ts'
import { assertRRsets, isManagedName, releaseSubdomain, type SyncDeps, unknownOutcome } from './sync.ts'

/**
 * The background half of convergence: the sweeper, finishing what a crash left pending, the
 * repair of RRsets whose upstream state is unknown, and the anti-entropy pass over every zone.
 */

type JobDeps = SyncDeps & Pick<DomainDeps, 'audit' | 'leases' | 'zones'>

export interface Repair {
  zone: string
  name: string
  type: string
  action: 'replace' | 'delete'
  source: 'repair' | 'anti_entropy'
}

function report(
  deps: Pick<DomainDeps, 'logger' | 'drift'>,
  repair: Repair,
  served: ServedRRset | undefined,
  desired: ServedRRset,
) {
  deps.logger.info(
    {
      ...repair,
      served: served?.records ?? [],
      served_ttl: served?.ttl,
      desired: desired.records,
      desired_ttl: desired.ttl,
    },
    'upstream repaired: it served something else than the database holds',
  )
  deps.drift.repaired(repair)
}

/** Releases subdomains whose grace period is over: everything under them removed upstream first, then the rows. */
export async function sweepExpired(deps: JobDeps): Promise<{ released: string[]; failed: string[] }> {
  const released: string[] = []
  const failed: string[] = []
  const graceMs = deps.settings.graceDays * DAY_MS
  for (const s of await deps.subdomains.expiredBefore(new Date(deps.clock.now().getTime() - graceMs))) {
    try {
      await releaseSubdomain(deps, { accountId: null, id: s.id })
      await deps.audit.audit({
        accountId: s.accountId,
        credentialId: null,
        ip: null,
        operation: 'sweeper.release',
        target: s.fullDomain,
        outcome: 'ok',
      })
      released.push(s.fullDomain)
    } catch (err) {
      deps.logger.warn({ err, subdomain: s.fullDomain }, 'sweeper could not release a subdomain')
      failed.push(s.fullDomain)
    }
  }
  return { released, failed }
}

/**
 * Rolls back record writes left pending by a crash and makes releases a crash left unfinished
 * active again, then asserts the database's state of what they touched upstream.
 */
export async function reconcilePending(deps: JobDeps): Promise<{ rolled_back: number[]; failed: number[] }> {
  const before = new Date(deps.clock.now().getTime() - deps.settings.pendingTimeoutMs)
  const rolledBack: number[] = []
  const failed: number[] = []
  const stale = await deps.records.stalePending(before)
  const bySubdomain = new Map<number, typeof stale>()
  for (const r of stale) bySubdomain.set(r.subdomainId, [...(bySubdomain.get(r.subdomainId) ?? []), r])
  for (const [subdomainId, rows] of bySubdomain) {
    const s = await deps.subdomains.getSubdomain(null, subdomainId)
    if (!s) continue
    const ids = rows.map((r) => r.id)
    const keys = rows.flatMap((r) =>
      [r, ...(r.previous ? [r.previous] : [])].map((f) => ({
        name: fqdnOf(f.name, s.fullDomain),
        type: f.type,
      })),
    )
    await deps.records.settleRecords(ids, 'rollback')
    rolledBack.push(...ids)
    try {
      await assertRRsets(deps, s.rootdomain, keys)
    } catch (err) {
      deps.logger.warn({ err, subdomainId }, 'reconcile could not reach the provider; the repair job retries')
      await unknownOutcome(deps, s.rootdomain, keys, err)
      failed.push(...ids)
    }
  }
  for (const s of await deps.subdomains.staleReleasing(before)) {
    await deps.subdomains.abortRelease(s.id)
    const keys = (await deps.records.listRecords(s.id)).map((r) => ({
      name: fqdnOf(r.name, s.fullDomain),
      type: r.type,
    }))
    await unknownOutcome(deps, s.rootdomain, keys, new Error('a release was left unfinished'))
  }
  return { rolled_back: rolledBack, failed }
}

/**
 * The repair job: each RRset whose upstream state is unknown (marked by a failed or timed-out
 * call) is re-asserted and read back. A mark is cleared once the upstream agrees and the call
 * that made it is at least twice PROVIDER_TIMEOUT_MS old (a request the upstream took but
 * answered too late may still land until then); otherwise it is tried again with backoff.
 */
export async function repairUpstream(
  deps: JobDeps,
): Promise<{ checked: number; repaired: Repair[]; pending: number }> {
  const now = deps.clock.now()
  const due = await deps.upstream.dueRepairs(now, 500)
  const settleMs = 2 * deps.settings.providerTimeoutMs
  const repaired: Repair[] = []
  let pending = 0
  const byZone = new Map<string, typeof due>()
  for (const r of due) byZone.set(r.zone, [...(byZone.get(r.zone) ?? []), r])
  for (const [zone, marks] of byZone) {
    const keys: RRsetKey[] = marks.map((m) => ({ name: m.name, type: m.type }))
    try {
      const before = await servedMap(deps, zone)
      await assertRRsets(deps, zone, keys)
      const after = await servedMap(deps, zone)
      const desired = await deps.upstream.desiredRRsets(zone, keys)
      for (const m of marks) {
        const key = rrsetKey(m.name, m.type)
        const want = desiredRRset(m.name, m.type, desired.rrsets.get(key) ?? [])
        const managed = isManagedName(zone, m.name, deps.settings.reservedLabels, desired.owners)
        if (managed && before && !sameRRset(before.get(key), want)) {
          const repair: Repair = {
            zone,
            name: m.name,
            type: m.type,
            action: want.records.length ? 'replace' : 'delete',
            source: 'repair',
          }
          report(deps, repair, before.get(key), want)
          repaired.push(repair)
        }
        const agrees = !managed || !after || sameRRset(after.get(key), want)
        const settled = now.getTime() - m.since.getTime() >= settleMs
        if (agrees && settled) await deps.upstream.clearRepair(m.id, m.since)
        else {
          pending++
          const next = agrees ? m.since.getTime() + settleMs : now.getTime() + backoffMs(m.attempts)
          await deps.upstream.deferRepair(
            m.id,
            new Date(next),
            agrees ? null : 'the upstream does not agree yet',
          )
        }
      }
    } catch (err) {
      deps.logger.warn({ err, zone }, 'repair could not reach the provider; retrying with backoff')
      for (const m of marks) {
        pending++
        await deps.upstream.deferRepair(
          m.id,
          new Date(now.getTime() + backoffMs(m.attempts)),
          err instanceof Error ? err.message : String(err),
        )
      }
    }
  }
  return { checked: due.length, repaired, pending }
}

const backoffMs = (attempts: number) => Math.min(60_000, 1000 * 2 ** Math.min(attempts, 6))

async function servedMap(deps: Pick<DomainDeps, 'provider'>, zone: string) {
  const all = await deps.provider.listRRsets(zone)
  return all && new Map(all.map((r) => [rrsetKey(r.name, r.type), r]))
}

export const ANTI_ENTROPY_LEASE = 'anti-entropy'

/**
 * Anti-entropy: per root zone, every RRset served at or under a name dns-manager manages is
 * compared with the database, and the upstream is repaired where they differ: RRsets the
 * database does not hold are deleted (names under released labels or that no subdomain owns
 * included), missing or different ones replaced. RRsets a write or a release is changing right
 * now are left to it. One replica at a time (a lease in Postgres); the others skip.
 */
export async function reconcileUpstream(
  deps: JobDeps,
  holder: string,
): Promise<{
  skipped?: 'no upstream' | 'another replica'
  zones: number
  checked: number
  repaired: Repair[]
}> {
  const repaired: Repair[] = []
  const leaseMs = Math.max(60_000, 20 * deps.settings.providerTimeoutMs)
  if (deps.provider.kind === 'database') return { skipped: 'no upstream', zones: 0, checked: 0, repaired }
  if (!(await deps.leases.acquireLease(ANTI_ENTROPY_LEASE, holder, leaseMs)))
    return { skipped: 'another replica', zones: 0, checked: 0, repaired }
  let checked = 0
  try {
    const zones = await deps.zones.listZones()
    for (const zone of zones) {
      // Extends the lease, zone by zone; losing it (a pause longer than the lease) stops the pass.
      if (!(await deps.leases.acquireLease(ANTI_ENTROPY_LEASE, holder, leaseMs))) break
      try {
        checked += await reconcileZone(deps, zone.name, repaired)
      } catch (err) {
        deps.logger.warn(
          { err, zone: zone.name },
          'anti-entropy could not check a zone; the next pass retries',
        )
      }
    }
    return { zones: zones.length, checked, repaired }
  } finally {
    await deps.leases.releaseLease(ANTI_ENTROPY_LEASE, holder).catch(() => {})
  }
}

/** One zone of the anti-entropy pass; returns how many RRsets it compared. */
async function reconcileZone(deps: JobDeps, zone: string, repaired: Repair[]): Promise<number> {
  let checked = 0
  const served = await servedMap(deps, zone)
  if (!served) return 0
  const snapshot = await deps.upstream.zoneSnapshot(zone)
  const owners: OwnerStamp[] = snapshot.map(({ subdomain: s }) => ({
    label: s.label,
    subdomainId: s.id,
    state: s.state,
    version: s.dnsVersion,
  }))
  const desired = new Map<string, ServedRRset>()
  const inFlight = new Set<string>()
  for (const { subdomain: s, records } of snapshot) {
    if (s.state !== 'active') {
      inFlight.add(s.label)
      continue
    }
    for (const [key, rrset] of desiredOfSubdomain(s.fullDomain, records)) desired.set(key, rrset)
    for (const r of records)
      if (r.state !== 'active')
        for (const f of [r, ...(r.previous ? [r.previous] : [])])
          inFlight.add(rrsetKey(fqdnOf(f.name, s.fullDomain), f.type))
  }
  const candidates = new Set<string>()
  for (const key of [...served.keys(), ...desired.keys()]) {
    const { name } = splitKey(key)
    if (!isManagedName(zone, name, deps.settings.reservedLabels, owners)) continue
    if (inFlight.has(key) || inFlight.has(ownerLabelOf(zone, name)!)) continue
    checked++
    if (!sameRRset(served.get(key), desired.get(key))) candidates.add(key)
  }
  if (candidates.size === 0) return checked
  // A second look at what differs, with the database read after the upstream this time: a
  // write that landed between the two reads above is not drift.
  const keys = [...candidates].map(splitKey)
  const again = await servedMap(deps, zone)
  const now = await deps.upstream.desiredRRsets(zone, keys)
  const drifted = keys.filter((k) => {
    const key = rrsetKey(k.name, k.type)
    const want = desiredRRset(k.name, k.type, now.rrsets.get(key) ?? [])
    return !now.inFlight.has(key) && !sameRRset(again?.get(key), want)
  })
  if (drifted.length === 0) return checked
  await assertRRsets(deps, zone, drifted)
  for (const k of drifted) {
    const key = rrsetKey(k.name, k.type)
    const want = desiredRRset(k.name, k.type, now.rrsets.get(key) ?? [])
    const repair: Repair = {
      zone: zone,
      name: k.name,
      type: k.type,
      action: want.records.length ? 'replace' : 'delete',
      source: 'anti_entropy',
    }
    report(deps, repair, again?.get(key), want)
    repaired.push(repair)
  }
  return checked
}
