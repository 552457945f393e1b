import type { RecordValues } from '../record-rules.ts'

// The rows the repositories return, as plain objects: what every port below speaks of.

export interface AccountRow {
  id: string
  email: string
  balanceCents: number
  quotaTotal: number
  apiAccessEnabled: boolean
  ipAllowList: string[]
}
/**
 * What a credential may do: `full`, everything the account may (its API keys); `dyndns`, update
 * the addresses of one subdomain through /nic/update and nothing else; `acme`, write and delete
 * TXT records under `_acme-challenge` (ACME DNS-01) of one subdomain or of all the account's, and
 * nothing else.
 */
export type CredentialScope = 'full' | 'dyndns' | 'acme'
export interface CredentialRow {
  id: string
  accountId: string
  publicKey: string
  secretHash: string
  createdAt: Date
  lastUsedAt: Date | null
  scope: CredentialScope
  /** The one subdomain a scoped credential acts on; null for `full` and an account-wide `acme`. */
  subdomainId: number | null
}
export interface ZoneRow {
  id: number
  name: string
  priceCents: number
  termYears: number
}
export type SubdomainState = 'active' | 'releasing'
export interface SubdomainRow {
  id: number
  accountId: string
  rootZoneId: number
  rootdomain: string
  label: string
  fullDomain: string
  suspended: boolean
  neverExpires: boolean
  expiresAt: Date | null
  createdAt: Date
  updatedAt: Date
  /** `releasing`: being deleted or released; the row (and the label) stays until the upstream confirms. */
  state: SubdomainState
  stateSince: Date | null
  /** Bumped by every change of the subdomain's desired DNS state. */
  dnsVersion: number
}
/** What a list of subdomains shows of each (all a client sees of one). */
export type SubdomainListRow = Pick<
  SubdomainRow,
  | 'id'
  | 'label'
  | 'rootdomain'
  | 'fullDomain'
  | 'suspended'
  | 'neverExpires'
  | 'expiresAt'
  | 'createdAt'
  | 'updatedAt'
>
export type RecordState = 'active' | 'pending_create' | 'pending_update' | 'pending_delete'
/** A record's values as stored: the domain's validated values, with the type as the column holds it. */
export type RecordFields = Omit<RecordValues, 'type'> & { type: string }
export interface RecordRow extends RecordFields {
  id: number
  subdomainId: number
  state: RecordState
  previous: RecordFields | null
  pendingSince: Date | null
  createdAt: Date
  updatedAt: Date
}
