import type { RecordFields, RecordRow, SubdomainRow } from './rows.ts'

// A subdomain's DNS records (domain/dns-records.ts).

/**
 * One change of a record write, planned by the domain against every record of the subdomain.
 * `rrsetTtl.siblings`: other records of the same RRset that take the new TTL in the same write
 * (stored as pending updates, so they confirm or roll back with it).
 */
export type RecordChange =
  | { op: 'create'; values: RecordFields; rrsetTtl?: { ttl: number; siblings: number[] } }
  | { op: 'update'; id: number; values: RecordFields; rrsetTtl?: { ttl: number; siblings: number[] } }
  | { op: 'delete'; id: number }

export interface RRsetKey {
  name: string
  type: string
}

export interface RecordStore {
  listRecords(subdomainId: number, options?: { afterId?: number; limit?: number }): Promise<RecordRow[]>
  /** The records after `afterId` of a subdomain of the account, read together with its ownership; null when not the account's. */
  listOwnRecords(accountId: string, subdomainId: number, afterId: number): Promise<RecordRow[] | null>
  getRecord(subdomainId: number, id: number): Promise<RecordRow | null>
  /**
   * Phase 1 of a record write, one short transaction: `plan` sees every record of the subdomain
   * (pending ones included) and returns the change, which is committed as pending with a new DNS
   * version of the subdomain. Null when the subdomain is not the account's. No lock outlives it.
   */
  beginRecordChange(
    accountId: string,
    subdomainId: number,
    now: Date,
    plan: (s: SubdomainRow, records: RecordRow[]) => RecordChange,
  ): Promise<{ subdomain: SubdomainRow; record: RecordRow; touched: RRsetKey[]; recordIds: number[] } | null>
  /**
   * Phase 3, after the upstream call: `confirm` makes the pending rows the state; `rollback`
   * restores what they replaced (and bumps the DNS version, since the desired state changed back).
   * Answers how many rows were still pending: fewer than asked when the reconcile job rolled a
   * write back that took longer than PENDING_TIMEOUT_MS.
   */
  settleRecords(recordIds: number[], outcome: 'confirm' | 'rollback'): Promise<number>
  /** The accounts holding these records (read before a settle, which may delete them). */
  accountsOfRecords(recordIds: number[]): Promise<string[]>
  stalePending(before: Date, limit?: number): Promise<RecordRow[]>
}
