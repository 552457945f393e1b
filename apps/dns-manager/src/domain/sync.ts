import { ApiError, dependencyFailure } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import type { DomainDeps } from './deps.ts'
import { fqdnOf, isRegistrableLabel, ownerLabelOf } from './names.ts'
import type { OwnerStamp, RecordChange, RecordRow, RRsetKey, SubdomainRow } from './ports.ts'
import { ProviderError, type ServedRRset } from './provider.ts'
import { desiredRRset, rrsetKey } from './rrset-comparison.ts'

/**
 * Keeping the upstream in line with the database, on the request path: record writes and the
 * release of a subdomain. The database is the desired state; no transaction or row lock is held
 * while the upstream is called (desired state committed first, then pushed, then settled).
 */

export type SyncDeps = Pick<
  DomainDeps,
  'records' | 'subdomains' | 'upstream' | 'provider' | 'clock' | 'logger' | 'settings' | 'drift'
>

export function providerFailure(deps: Pick<DomainDeps, 'logger'>, err: unknown): ApiError {
  deps.logger.warn({ err }, 'provider operation failed')
  return new ApiError(
    'provider_operation_failed',
    'the upstream DNS provider refused or did not answer',
    undefined,
    { cause: err },
  )
}

/**
 * Whether dns-manager owns the namespace at a name: under a label a subdomain holds, or one that
 * could be registered (LDH, not reserved). The zone's apex and reserved or non-LDH labels
 * (`ns1`, `_acme-challenge`) are the operator's and never touched.
 */
export function isManagedName(
  zone: string,
  fqdn: string,
  reservedLabels: readonly string[],
  owners: readonly OwnerStamp[],
): boolean {
  const label = ownerLabelOf(zone, fqdn)
  if (label === null) return false
  if (owners.some((o) => o.label === label && o.subdomainId !== null)) return true
  return isRegistrableLabel(label) && !reservedLabels.includes(label)
}

const ASSERT_ROUNDS = 5

/**
 * Makes the upstream serve the database's state of these RRsets (names fully qualified): reads
 * the desired state, pushes it, and pushes again while the owners' DNS versions moved during the
 * round (another write or a release committed meanwhile), so a push of older data can never be
 * the last one. Throws ProviderError when the upstream fails: the outcome is then unknown.
 */
export async function assertRRsets(deps: SyncDeps, zone: string, keys: readonly RRsetKey[]): Promise<void> {
  if (keys.length === 0) return
  const unique = [...new Map(keys.map((k) => [rrsetKey(k.name, k.type), k])).values()]
  const labels = unique.map((k) => ownerLabelOf(zone, k.name)).filter((l): l is string => l !== null)
  for (let round = 1; ; round++) {
    const desired = await deps.upstream.desiredRRsets(zone, unique)
    const push = unique
      .filter((k) => isManagedName(zone, k.name, deps.settings.reservedLabels, desired.owners))
      .map((k) => desiredRRset(k.name, k.type, desired.rrsets.get(rrsetKey(k.name, k.type)) ?? []))
    await deps.provider.applyRRsets(zone, push)
    const after = await deps.upstream.ownerStamps(zone, labels)
    if (sameOwners(desired.owners, after)) return
    if (round === ASSERT_ROUNDS) {
      // Still moving: each later change is pushed by its own writer; the repair job checks these too.
      await unknownOutcome(deps, zone, unique, new Error('the desired state kept changing'))
      return
    }
  }
}

function sameOwners(a: readonly OwnerStamp[], b: readonly OwnerStamp[]): boolean {
  return (
    a.length === b.length &&
    a.every((o, i) => {
      const p = b[i]!
      return (
        o.label === p.label &&
        o.subdomainId === p.subdomainId &&
        o.state === p.state &&
        o.version === p.version
      )
    })
  )
}

/**
 * An upstream call timed out or failed half-way: what the upstream holds is unknown. The RRsets
 * are marked for the repair job, which re-asserts the database's state and reads it back until
 * the upstream agrees; the app runs it soon (drift.unknownOutcome).
 */
export async function unknownOutcome(
  deps: Pick<DomainDeps, 'upstream' | 'logger' | 'drift'>,
  zone: string,
  keys: readonly RRsetKey[],
  err: unknown,
): Promise<void> {
  try {
    await deps.upstream.addRepairs(zone, [...keys], err instanceof Error ? err.message : String(err))
  } catch (markErr) {
    // The anti-entropy job compares the whole zone anyway; it finds these too.
    deps.logger.error({ err: markErr, zone }, 'could not mark RRsets for repair')
  }
  deps.drift.unknownOutcome(zone, keys.length)
}

/**
 * A record write: the change is committed as pending (phase 1), the touched RRsets are asserted
 * upstream (phase 2, no lock held), then the change is confirmed (phase 3). When the upstream
 * fails or does not answer, the change is rolled back, its RRsets are marked for repair (the
 * upstream may have applied it anyway), and the answer is 502.
 */
export async function writeRecord(
  deps: SyncDeps,
  p: Principal,
  subdomainId: number,
  plan: (s: SubdomainRow, records: RecordRow[]) => RecordChange,
): Promise<RecordRow> {
  const begun = await deps.records.beginRecordChange(
    p.accountId,
    subdomainId,
    deps.clock.now(),
    (s, rows) => {
      if (s.state !== 'active')
        throw new ApiError('conflict', `${s.fullDomain} is being deleted; it takes no more changes`)
      return plan(s, rows)
    },
  )
  if (!begun) throw new ApiError('subdomain_not_found', `no subdomain ${subdomainId} on this account`)
  const s = begun.subdomain
  const keys = begun.touched.map((t) => ({ name: fqdnOf(t.name, s.fullDomain), type: t.type }))
  try {
    await assertRRsets(deps, s.rootdomain, keys)
  } catch (err) {
    const cleanUp = async () => {
      try {
        await deps.records.settleRecords(begun.recordIds, 'rollback')
      } catch (rollbackErr) {
        // Left pending: the reconcile job rolls it back after PENDING_TIMEOUT_MS.
        deps.logger.error({ err: rollbackErr, subdomainId }, 'could not roll back a failed record write')
      }
      await unknownOutcome(deps, s.rootdomain, keys, err)
    }
    if (err instanceof ProviderError) {
      await cleanUp()
      throw providerFailure(deps, err)
    }
    // The database itself failed (an upstream kept in it, or a read of the desired state): each
    // clean-up step would wait out its own deadline on it, so the client hears 503 now and the
    // clean-up goes on behind (a pending row is invisible, and the reconcile job finishes it).
    if (dependencyFailure(err) === 'unavailable')
      void cleanUp().catch((cleanUpErr: unknown) =>
        deps.logger.error({ err: cleanUpErr }, 'record write clean-up failed'),
      )
    else await cleanUp()
    throw err
  }
  const confirmed = await deps.records.settleRecords(begun.recordIds, 'confirm')
  if (confirmed < begun.recordIds.length) {
    // Slower than PENDING_TIMEOUT_MS (a database or upstream stalling): the reconcile job rolled
    // the write back meanwhile, perhaps before this push landed. DNS follows the database again,
    // and the client hears that nothing was kept.
    await assertRRsets(deps, s.rootdomain, keys).catch((err: unknown) =>
      unknownOutcome(deps, s.rootdomain, keys, err),
    )
    throw new ApiError(
      'service_unavailable',
      'the change took too long to complete and was undone; try again',
      undefined,
      { headers: { 'Retry-After': '5' } },
    )
  }
  return begun.record
}

const RELEASE_ROUNDS = 3

/** Every RRset served at or under `fqdn`. Null when there is no upstream to read. */
async function servedUnder(deps: Pick<DomainDeps, 'provider'>, zone: string, fqdn: string) {
  const all = await deps.provider.listRRsets(zone)
  return all && all.filter((r) => r.name === fqdn || r.name.endsWith(`.${fqdn}`))
}

/**
 * Deleting or releasing a subdomain: it is marked `releasing` (writes refused, its row and label
 * kept), then every RRset served at or under its name is deleted upstream, whatever the database
 * knows, and read back until none is left; only then does the row go and the label become free
 * for the next registrant. When the upstream fails, the subdomain is active again and its RRsets
 * are marked for repair (502).
 */
export async function releaseSubdomain(
  deps: SyncDeps,
  who: { accountId: string | null; id: number },
): Promise<SubdomainRow> {
  const begun = await deps.subdomains.beginRelease(who.accountId, who.id, deps.clock.now())
  if (begun === null) throw new ApiError('subdomain_not_found', `no subdomain ${who.id} on this account`)
  if (begun === 'busy') throw new ApiError('conflict', `subdomain ${who.id} is already being deleted`)
  const s = begun.subdomain
  const zone = s.rootdomain
  const seen = new Map<string, RRsetKey>()
  for (const r of begun.records)
    for (const f of [r, ...(r.previous ? [r.previous] : [])]) {
      const name = fqdnOf(f.name, s.fullDomain)
      seen.set(rrsetKey(name, f.type), { name, type: f.type })
    }
  try {
    let confirmed = false
    for (let round = 1; round <= RELEASE_ROUNDS && !confirmed; round++) {
      const served = await servedUnder(deps, zone, s.fullDomain)
      for (const r of served ?? []) seen.set(rrsetKey(r.name, r.type), { name: r.name, type: r.type })
      const deletions: ServedRRset[] = [...seen.values()].map((k) => ({ ...k, ttl: 0, records: [] }))
      await deps.provider.applyRRsets(zone, deletions)
      // No upstream to read back (the database provider): nothing else can be served.
      confirmed = served === null || (await servedUnder(deps, zone, s.fullDomain))?.length === 0
    }
    if (!confirmed)
      throw new ProviderError(
        `RRsets under ${s.fullDomain} were still served after ${RELEASE_ROUNDS} deletions`,
      )
  } catch (err) {
    try {
      await deps.subdomains.abortRelease(s.id)
    } catch (abortErr) {
      // Left releasing: the reconcile job makes it active again after PENDING_TIMEOUT_MS.
      deps.logger.error({ err: abortErr, subdomain: s.fullDomain }, 'could not undo a failed release')
    }
    await unknownOutcome(deps, zone, [...seen.values()], err)
    if (err instanceof ProviderError) throw providerFailure(deps, err)
    throw err
  }
  await deps.subdomains.finishRelease(s.id)
  return s
}
