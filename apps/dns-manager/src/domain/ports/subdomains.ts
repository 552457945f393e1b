import type { RecordRow, SubdomainListRow, SubdomainRow, ZoneRow } from './rows.ts'

// Zones and subdomains (domain/subdomains.ts).

export interface ZoneStore {
  listZones(): Promise<ZoneRow[]>
  findZone(name: string): Promise<ZoneRow | null>
  upsertZone(zone: Omit<ZoneRow, 'id'>): Promise<ZoneRow>
}

export type CreateSubdomainOutcome =
  | { ok: true; subdomain: SubdomainRow }
  | { ok: false; reason: 'quota'; used: number; total: number }
  | { ok: false; reason: 'balance'; balance: number; required: number }
  | { ok: false; reason: 'taken' }

export interface SubdomainStore {
  /** Within the quota, charging the zone price; exact under concurrency (the account's row lock). */
  createSubdomain(input: {
    accountId: string
    zone: ZoneRow
    label: string
    fullDomain: string
    expiresAt: Date | null
    neverExpires: boolean
  }): Promise<CreateSubdomainOutcome>
  /** `accountId` null: any account's (jobs). */
  getSubdomain(accountId: string | null, id: number): Promise<SubdomainRow | null>
  findSubdomainByName(fullDomain: string): Promise<SubdomainRow | null>
  listSubdomains(
    accountId: string,
    options: { afterId: number; limit: number; rootdomain?: string | undefined; search?: string | undefined },
  ): Promise<SubdomainListRow[]>
  /**
   * Renews under the subdomain's row lock: `decide` sees the committed expiry and returns the
   * new one and the price (or throws); the price is taken only if the balance covers it.
   */
  renewSubdomain<E>(
    accountId: string,
    id: number,
    decide: (s: SubdomainRow, zone: ZoneRow) => { expiresAt: Date; priceCents: number },
    onInsufficient: (balance: number, required: number) => E,
  ): Promise<{ subdomain: SubdomainRow; charged: number; balance: number } | null>
  /**
   * Marks an active subdomain `releasing` (and bumps its DNS version) and returns it with its
   * records; 'busy' when it is already being released, null when it is not the account's.
   */
  beginRelease(
    accountId: string | null,
    id: number,
    now: Date,
  ): Promise<{ subdomain: SubdomainRow; records: RecordRow[] } | 'busy' | null>
  /** The upstream confirmed nothing is served under it: the row (with its records) goes, the label is free. */
  finishRelease(id: number): Promise<void>
  /** The release failed: active again, with a new DNS version. */
  abortRelease(id: number): Promise<void>
  /** Releases a crash left unfinished. */
  staleReleasing(before: Date, limit?: number): Promise<SubdomainRow[]>
  /** Subdomains whose grace period ended before `before`. */
  expiredBefore(before: Date, limit?: number): Promise<SubdomainRow[]>
}
