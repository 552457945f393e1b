/**
 * What the domain needs from storage, one file of ports per operation group (ports/), gathered
 * here; src/store implements them over Prisma/Postgres and returns plain objects (ports/rows.ts).
 * The upstream DNS provider port is provider.ts.
 */
import type { AccountStore, CredentialStore } from './ports/accounts.ts'
import type { AuditStore } from './ports/audit.ts'
import type { RecordStore } from './ports/dns-records.ts'
import type { PeopleStore, WebSessionStore } from './ports/people.ts'
import type { SubdomainStore, ZoneStore } from './ports/subdomains.ts'
import type { LeaseStore, UpstreamStateStore } from './ports/sync.ts'

export type * from './ports/accounts.ts'
export type * from './ports/audit.ts'
export type * from './ports/dns-records.ts'
export type * from './ports/people.ts'
export type * from './ports/rows.ts'
export type * from './ports/subdomains.ts'
export type * from './ports/sync.ts'
export type * from './ports/views.ts'

export interface HealthProbe {
  ping(): Promise<unknown>
}

/** Every port at once: what `store/repository.ts` builds over one database. */
export type Stores = AccountStore &
  CredentialStore &
  ZoneStore &
  SubdomainStore &
  RecordStore &
  UpstreamStateStore &
  LeaseStore &
  AuditStore &
  PeopleStore &
  WebSessionStore &
  HealthProbe
