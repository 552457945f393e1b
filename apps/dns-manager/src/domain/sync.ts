import { ApiError } from '@quartet/core/errors'
import type { Principal } from './accounts.ts'
import type { DomainDeps } from './deps.ts'
import { fqdnOf } from './names.ts'
import type { RecordChange, RecordRow, SubdomainRow } from './ports.ts'
import { type DnsProvider, ProviderError, type RRset } from './provider.ts'
import { type RecordType, rdataOf, TTL_DEFAULT } from './records.ts'
import { asValues } from './views.ts'

/**
 * Keeping the upstream DNS provider in line with the database: record writes (pending → upstream
 * → confirmed), releasing a subdomain, and the jobs that finish what a crash left half done.
 */

type SyncDeps = Pick<DomainDeps, 'records' | 'provider' | 'clock' | 'logger' | 'settings'>

export function providerFailure(deps: Pick<DomainDeps, 'logger'>, err: unknown): ApiError {
  deps.logger.warn({ err }, 'provider operation failed')
  return new ApiError(
    'provider_operation_failed',
    'the upstream DNS provider refused or did not answer',
    undefined,
    { cause: err },
  )
}

/** Desired RRsets (from the database) → one upstream call for the subdomain's zone. */
function pushTo(provider: DnsProvider, s: SubdomainRow) {
  return async (desired: Map<string, RecordRow[]>) => {
    const rrsets: RRset[] = [...desired.entries()].map(([key, rows]) => {
      const [name, type] = key.split(' ') as [string, RecordType]
      return {
        name: fqdnOf(name, s.fullDomain),
        type,
        ttl: rows.length ? Math.min(...rows.map((r) => r.ttl)) : TTL_DEFAULT,
        records: rows.map((r) => rdataOf(asValues(r))),
      }
    })
    await provider.applyRRsets(s.rootdomain, rrsets)
  }
}

/** Pending → upstream → confirm, or roll back and answer 502. */
export async function writeRecord(
  deps: SyncDeps,
  p: Principal,
  subdomainId: number,
  plan: (s: SubdomainRow, records: RecordRow[]) => RecordChange,
): Promise<RecordRow> {
  const { records } = deps
  const begun = await records.beginRecordChange(p.accountId, subdomainId, deps.clock.now(), plan)
  if (!begun) throw new ApiError('subdomain_not_found', `no subdomain ${subdomainId} on this account`)
  const ids = [begun.record.id]
  try {
    await records.pushAndSettle(
      subdomainId,
      ids,
      begun.touched,
      pushTo(deps.provider, begun.subdomain),
      'confirm',
      deps.settings.providerTimeoutMs,
    )
  } catch (err) {
    await records.rollbackRecords(ids)
    if (err instanceof ProviderError) throw providerFailure(deps, err)
    throw err
  }
  return begun.record
}

/** Removes the subdomain's records upstream first, then its row. */
export async function releaseSubdomain(
  deps: Pick<DomainDeps, 'records' | 'subdomains' | 'provider' | 'logger'>,
  s: SubdomainRow,
): Promise<void> {
  const records = await deps.records.listRecords(s.id)
  const keys = new Map<string, RRset>()
  for (const r of records) {
    for (const f of [r, ...(r.previous ? [r.previous] : [])])
      keys.set(`${f.name} ${f.type}`, {
        name: fqdnOf(f.name, s.fullDomain),
        type: f.type as RecordType,
        ttl: TTL_DEFAULT,
        records: [],
      })
  }
  try {
    await deps.provider.applyRRsets(s.rootdomain, [...keys.values()])
  } catch (err) {
    if (err instanceof ProviderError) throw providerFailure(deps, err)
    throw err
  }
  await deps.subdomains.deleteSubdomain(s.id)
}

/** Releases subdomains whose grace period is over: records removed upstream first, then the rows. */
export async function sweepExpired(
  deps: Pick<DomainDeps, 'records' | 'subdomains' | 'audit' | 'provider' | 'clock' | 'logger' | 'settings'>,
): Promise<{ released: string[]; failed: string[] }> {
  const released: string[] = []
  const failed: string[] = []
  const graceMs = deps.settings.graceDays * 86_400_000
  for (const s of await deps.subdomains.expiredBefore(new Date(deps.clock.now().getTime() - graceMs))) {
    try {
      await releaseSubdomain(deps, s)
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

/** Rolls back record writes left pending by a crash, and makes the upstream match the database again. */
export async function reconcilePending(
  deps: SyncDeps & Pick<DomainDeps, 'subdomains'>,
): Promise<{ rolled_back: number[]; failed: number[] }> {
  const stale = await deps.records.stalePending(
    new Date(deps.clock.now().getTime() - deps.settings.pendingTimeoutMs),
  )
  const bySubdomain = new Map<number, RecordRow[]>()
  for (const r of stale) bySubdomain.set(r.subdomainId, [...(bySubdomain.get(r.subdomainId) ?? []), r])
  const rolledBack: number[] = []
  const failed: number[] = []
  for (const [subdomainId, rows] of bySubdomain) {
    const ids = rows.map((r) => r.id)
    const s = await deps.subdomains.getSubdomain(null, subdomainId)
    if (!s) continue
    const touched = rows.flatMap((r) => [
      { name: r.name, type: r.type },
      ...(r.previous ? [{ name: r.previous.name, type: r.previous.type }] : []),
    ])
    try {
      await deps.records.pushAndSettle(
        subdomainId,
        ids,
        touched,
        pushTo(deps.provider, s),
        'rollback',
        deps.settings.providerTimeoutMs,
      )
      rolledBack.push(...ids)
    } catch (err) {
      deps.logger.warn({ err, subdomainId }, 'reconcile could not reach the provider; will retry')
      failed.push(...ids)
    }
  }
  return { rolled_back: rolledBack, failed }
}
