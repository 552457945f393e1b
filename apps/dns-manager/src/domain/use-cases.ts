import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import * as accounts from './accounts.ts'
import * as acme from './acme.ts'
import * as credentials from './credentials.ts'
import { randomUUID } from 'node:crypto'
import type { DomainDeps, DomainSettings, DriftObserver } from './deps.ts'
import * as dnsRecords from './dns-records.ts'
import * as dyndns from './dyndns.ts'
import type { FailedSecretGuard } from './failed-secrets.ts'
import type { CredentialLookup, Stores, ViewCache } from './ports.ts'
import type { DnsProvider } from './provider.ts'
import * as subdomains from './subdomains.ts'
import * as reconcile from './reconcile.ts'
import * as system from './system.ts'
import { uncachedViews } from './views.ts'

export { issueCredential } from './credentials.ts'
export { type DomainSettings, PER_PAGE_DEFAULT, PER_PAGE_MAX, VERSION } from './deps.ts'
export type { RecordPatch } from './dns-records.ts'
export type { Principal } from './principal.ts'
export type { Page, RecordView, SubdomainStatus, SubdomainView } from './views.ts'

type Args<F> = F extends (deps: never, ...args: infer A) => unknown ? A : never

/**
 * The domain's use cases with their dependencies bound, for the HTTP adapters and the jobs.
 * The rules live in the operation groups (accounts, credentials, subdomains, dns-records, sync,
 * system); this is only the wiring table. ("Service", in dns-manager, is only ever the deployed
 * program.)
 */
export function bindUseCases(deps: {
  repo: Stores
  provider: DnsProvider
  clock: Clock
  logger: Logger
  settings: DomainSettings
  guard: FailedSecretGuard
  /** Defaults to the store itself, uncached. */
  lookup?: CredentialLookup
  /** Defaults to none (every read from the store); only sound with `lookup`'s version tokens. */
  views?: ViewCache
  /** Defaults to nothing (tests); the app counts repairs and schedules the repair job. */
  drift?: DriftObserver
}) {
  const { repo } = deps
  /** This process, as the holder of job leases. */
  const holder = randomUUID()
  const d: DomainDeps = {
    accounts: repo,
    lookup: deps.lookup ?? accounts.uncachedLookup(repo),
    views: deps.views ?? uncachedViews,
    credentials: repo,
    zones: repo,
    subdomains: repo,
    records: repo,
    upstream: repo,
    leases: repo,
    audit: repo,
    health: repo,
    provider: deps.provider,
    guard: deps.guard,
    clock: deps.clock,
    logger: deps.logger,
    settings: deps.settings,
    drift: deps.drift ?? { repaired() {}, unknownOutcome() {} },
  }
  const bind =
    <F extends (deps: DomainDeps, ...args: never[]) => unknown>(f: F) =>
    (...args: Args<F>): ReturnType<F> =>
      (f as unknown as (deps: DomainDeps, ...a: Args<F>) => ReturnType<F>)(d, ...args)

  return {
    settings: deps.settings,
    // accounts
    authenticate: bind(accounts.authenticate),
    /** /nic/update takes the account's API keys and its update-only (dyndns) credentials. */
    authenticateDyndns: (credentials: { key: string; secret: string } | null, ip: string | undefined) =>
      accounts.authenticate(d, credentials, ip, ['full', 'dyndns']),
    dyndnsUpdate: bind(dyndns.dyndnsUpdate),
    verify: bind(accounts.verifyCredentials),
    quota: bind(accounts.quota),
    // subdomains
    listSubdomains: bind(subdomains.listSubdomains),
    getSubdomain: bind(subdomains.getSubdomain),
    createSubdomain: bind(subdomains.createSubdomain),
    renewSubdomain: bind(subdomains.renewSubdomain),
    deleteSubdomain: bind(subdomains.deleteSubdomain),
    exportZone: bind(subdomains.exportZone),
    // records
    listRecords: bind(dnsRecords.listRecords),
    getRecord: bind(dnsRecords.getRecord),
    createRecord: bind(dnsRecords.createRecord),
    updateRecord: bind(dnsRecords.updateRecord),
    deleteRecord: bind(dnsRecords.deleteRecord),
    // ACME DNS-01 (lego httpreq)
    presentChallenge: bind(acme.presentChallenge),
    cleanupChallenge: bind(acme.cleanupChallenge),
    // credentials
    newCredential: () => credentials.issueCredential(deps.settings.apiKeyPrefix),
    listKeys: bind(credentials.listKeys),
    createKey: bind(credentials.createKey),
    deleteKey: bind(credentials.deleteKey),
    regenerateKey: bind(credentials.regenerateKey),
    // whois and system
    whois: bind(system.whois),
    systemInfo: () => system.systemInfo(d),
    // jobs (sync)
    sweepExpired: () => reconcile.sweepExpired(d),
    reconcilePending: () => reconcile.reconcilePending(d),
    /** Re-asserts the RRsets marked after unknown outcomes (soon after each, and every JOBS_INTERVAL_MS). */
    repairUpstream: () => reconcile.repairUpstream(d),
    /** Anti-entropy over every zone, on one replica at a time. */
    reconcileUpstream: () => reconcile.reconcileUpstream(d, holder),
  }
}

export type UseCases = ReturnType<typeof bindUseCases>
