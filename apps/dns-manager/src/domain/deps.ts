import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import type { FailedSecretGuard } from './failed-secrets.ts'
import type {
  AccountStore,
  AuditStore,
  CredentialLookup,
  CredentialStore,
  HealthProbe,
  LeaseStore,
  RecordStore,
  SubdomainStore,
  UpstreamStateStore,
  ViewCache,
  ZoneStore,
} from './ports.ts'
import type { DnsProvider } from './provider.ts'

export const VERSION = '1.0.0'
export const PER_PAGE_MAX = 500
export const PER_PAGE_DEFAULT = 50
export const DAY_MS = 86_400_000

export interface DomainSettings {
  apiKeyPrefix: string
  maxApiKeys: number
  renewWindowDays: number
  graceDays: number
  maxRecordsPerSubdomain: number
  reservedLabels: readonly string[]
  allowPrivateAddresses: boolean
  nameservers: readonly string[]
  providerTimeoutMs: number
  pendingTimeoutMs: number
  /** Shown by system.info. */
  rateLimitPerMinute: number
  rpcMaxBatch: number
}

/** What the app does when the upstream drifts (metrics, and running the repair job soon). */
export interface DriftObserver {
  /** An RRset the upstream served differently from the database was made to match it (also logged). */
  repaired(repair: {
    zone: string
    name: string
    type: string
    action: 'replace' | 'delete'
    source: 'repair' | 'anti_entropy'
  }): void
  /** A call's outcome upstream is unknown and `count` RRsets were marked for repair. */
  unknownOutcome(zone: string, count: number): void
}

/**
 * Everything the domain's operations may use. Each operation group takes only the part it needs
 * (`Pick<DomainDeps, …>`), so a file's signature says which ports its rules touch.
 */
export interface DomainDeps {
  accounts: AccountStore
  /** Authentication's lookup of a credential and its account (cached per process with Redis). */
  lookup: CredentialLookup
  /** The answers of an account's polled reads, under the same version tokens (cached with Redis). */
  views: ViewCache
  credentials: CredentialStore
  zones: ZoneStore
  subdomains: SubdomainStore
  records: RecordStore
  /** The database side of convergence: desired RRsets by name, RRsets marked for repair. */
  upstream: UpstreamStateStore
  leases: LeaseStore
  audit: AuditStore
  health: HealthProbe
  provider: DnsProvider
  /** Budgets of failed secrets per address and per key (failed-secrets.ts). */
  guard: FailedSecretGuard
  clock: Clock
  logger: Logger
  settings: DomainSettings
  drift: DriftObserver
}
