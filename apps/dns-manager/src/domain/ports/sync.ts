import type { RRsetKey } from './dns-records.ts'
import type { RecordRow, SubdomainRow, SubdomainState } from './rows.ts'

// Convergence with the upstream DNS provider: desired RRsets, repairs, and the leases of the jobs
// (domain/sync.ts, domain/reconcile.ts).

/** Who owns a label under a zone, as of one read: a change of any part means the desired state moved. */
export interface OwnerStamp {
  label: string
  subdomainId: number | null
  state: SubdomainState | null
  version: number
}

/** The desired state of some RRsets of one zone, keyed `${fqdn} ${type}`. */
export interface DesiredState {
  /**
   * The records each RRset should hold: pending creates and updates included (their write is
   * under way), pending deletes left out; empty when no subdomain owns the name or its subdomain
   * is being released.
   */
  rrsets: Map<string, RecordRow[]>
  /** RRsets a write or a release is changing right now (pending rows, a releasing subdomain). */
  inFlight: Set<string>
  /** The owners of the labels involved, read before the records. */
  owners: OwnerStamp[]
}

export interface RepairRow {
  id: number
  zone: string
  /** Fully qualified, without the trailing dot. */
  name: string
  type: string
  since: Date
  attempts: number
}

/** The database side of convergence: desired RRsets by name, and the RRsets whose upstream state is unknown. */
export interface UpstreamStateStore {
  /** The desired state of these RRsets (names fully qualified, inside `zone`). */
  desiredRRsets(zone: string, keys: RRsetKey[]): Promise<DesiredState>
  ownerStamps(zone: string, labels: string[]): Promise<OwnerStamp[]>
  /** The zone's subdomains with their records (the anti-entropy job compares them with the upstream). */
  zoneSnapshot(zone: string): Promise<Array<{ subdomain: SubdomainRow; records: RecordRow[] }>>
  /** Marks RRsets as unknown upstream (a call timed out or failed); a mark already there starts over. */
  addRepairs(zone: string, keys: RRsetKey[], error: string): Promise<void>
  dueRepairs(now: Date, limit: number): Promise<RepairRow[]>
  /** Done, unless the RRset was marked again since `since`. */
  clearRepair(id: number, since: Date): Promise<void>
  deferRepair(id: number, nextAt: Date, error: string | null): Promise<void>
}

/** Leases of jobs that must run on one replica at a time; exact in the database. */
export interface LeaseStore {
  /** Takes the lease when free or expired, or extends it when `holder` has it. */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<boolean>
  releaseLease(name: string, holder: string): Promise<void>
}
