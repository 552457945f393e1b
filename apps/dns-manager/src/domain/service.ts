import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import * as accounts from './accounts.ts'
import * as credentials from './credentials.ts'
import type { DomainDeps, DomainSettings } from './deps.ts'
import * as dnsRecords from './dns-records.ts'
import type { FailedSecretGuard } from './failed-secrets.ts'
import type { Stores } from './ports.ts'
import type { DnsProvider } from './provider.ts'
import * as subdomains from './subdomains.ts'
import * as sync from './sync.ts'
import * as system from './system.ts'

export { issueCredential } from './credentials.ts'
export { type DomainSettings, PER_PAGE_DEFAULT, PER_PAGE_MAX, VERSION } from './deps.ts'
export type { RecordPatch } from './dns-records.ts'
export type { Principal } from './accounts.ts'
export type { Page, RecordView, SubdomainStatus, SubdomainView } from './views.ts'

type Args<F> = F extends (deps: never, ...args: infer A) => unknown ? A : never

/**
 * The domain's operations with their dependencies bound, for the HTTP adapters and the jobs.
 * The rules live in the operation groups (accounts, credentials, subdomains, dns-records, sync,
 * system); this is only the wiring table.
 */
export function createDnsService(deps: {
  repo: Stores
  provider: DnsProvider
  clock: Clock
  logger: Logger
  settings: DomainSettings
  guard: FailedSecretGuard
}) {
  const { repo } = deps
  const d: DomainDeps = {
    accounts: repo,
    credentials: repo,
    zones: repo,
    subdomains: repo,
    records: repo,
    audit: repo,
    health: repo,
    provider: deps.provider,
    guard: deps.guard,
    clock: deps.clock,
    logger: deps.logger,
    settings: deps.settings,
  }
  const bind =
    <F extends (deps: DomainDeps, ...args: never[]) => unknown>(f: F) =>
    (...args: Args<F>): ReturnType<F> =>
      (f as unknown as (deps: DomainDeps, ...a: Args<F>) => ReturnType<F>)(d, ...args)

  return {
    settings: deps.settings,
    // accounts
    authenticate: bind(accounts.authenticate),
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
    sweepExpired: () => sync.sweepExpired(d),
    reconcilePending: () => sync.reconcilePending(d),
  }
}

export type DnsService = ReturnType<typeof createDnsService>
