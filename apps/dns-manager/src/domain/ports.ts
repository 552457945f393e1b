/**
 * What the domain needs from storage, one port per operation group; src/store implements them
 * over Prisma/Postgres and returns plain objects. The upstream DNS provider port is provider.ts.
 */
import type { RecordValues } from './records.ts'

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

export interface NewAccount {
  email: string
  quotaTotal: number
  balanceCents: number
  apiAccessEnabled: boolean
  ipAllowList: string[]
  credential: StoredCredential
}
/** A public key and the SHA-256 of its secret: what is kept of a credential. */
export interface StoredCredential {
  publicKey: string
  secretHash: string
}

/** A credential with its account: everything authentication decides on. */
export interface CredentialWithAccount {
  credential: CredentialRow
  account: AccountRow
}

export interface AccountStore {
  /** The credential and its account in one round trip (every request runs it). */
  findCredential(publicKey: string): Promise<CredentialWithAccount | null>
  /** Records use, at most once a minute per credential. */
  touchCredential(id: string, now: Date): Promise<void>
  createAccount(input: NewAccount): Promise<AccountRow>
  updateAccount(
    id: string,
    data: Partial<Pick<AccountRow, 'email' | 'quotaTotal' | 'apiAccessEnabled' | 'ipAllowList'>>,
  ): Promise<AccountRow | null>
  creditBalance(id: string, cents: number): Promise<AccountRow | null>
  getAccount(id: string): Promise<AccountRow | null>
  /** Subdomains the account holds (what its quota counts). */
  countSubdomains(accountId: string): Promise<number>
}

/**
 * kv values read ahead for a credential lookup, in the kv command authentication makes anyway
 * (the failed-secret guard's read): `askedAt` is when they were asked for (performance.now()).
 * 'unreadable' when kv could not answer.
 */
export type ReadAhead = { values: Array<string | null>; askedAt: number } | 'unreadable'

/**
 * How authentication finds a credential and its account: every authenticated request of every
 * call style asks. A cached implementation (store/principal-cache.ts) keeps what it found per
 * process under version tokens in kv, which every write that changes a credential or its
 * account replaces before it answers, so every replica sees the change on its next request.
 */
export interface CredentialLookup {
  /** The kv keys `find` needs to vouch for what it holds of this key (none when it holds nothing). */
  readAhead(publicKey: string): string[]
  find(publicKey: string, readAhead: ReadAhead): Promise<CredentialWithAccount | null>
  /** Records use (at most once a minute per credential); a cached copy learns the time as well. */
  touch(found: CredentialWithAccount, now: Date): Promise<void>
  /**
   * The account's version tokens as `readAhead` brought them, when they may vouch for what this
   * request reads from the database after them (the same tokens vouch for the principal): null
   * when nothing read now may be cached (no tokens, kv unreadable or restarted since, no cache).
   */
  vouchedToken(readAhead: ReadAhead): string | null
  /**
   * What this process holds of the key, as it was last read, vouched for or not (undefined: not
   * held): for a caller that decides before any round trip whether to spend ahead (accounts.ts).
   */
  held(publicKey: string): CredentialWithAccount | undefined
}

/**
 * Reads kv keys, and may do more in the same command (spend rate-limit points): the values in
 * the keys' order, or null when kv could not be read.
 */
export type KvRead = (keys: readonly string[]) => Promise<Array<string | null> | null>

/** What the account's views cache says of a value: when it stops being true on its own (ms), if ever. */
export interface ViewLoad<T> {
  value: T
  /** Epoch ms after which the value is out of date without any write (a subdomain's status turns). */
  validUntil?: number
}

/**
 * The answers of an account's reads (its quota, pages of subdomains and records), kept per
 * process under the account's version token (store/view-cache.ts): every committed change to
 * what they show replaces that token before it is answered (PRINCIPAL_CHANGES), so a replica
 * whose request read the new token reads the database again. A cached value is frozen and shared
 * by every request that reads it.
 */
export interface ViewCache {
  read<T extends object>(
    accountId: string,
    /** The principal's vouched token (null: read and answer, cache nothing). */
    token: string | null,
    key: string,
    load: () => Promise<ViewLoad<T>>,
  ): Promise<T>
  /**
   * Whether every one of `values` is the one this cache would hand a request vouched by `token`
   * now (the same object, still kept, under that token, neither too old nor past its own time):
   * an answer made of such values alone is still the answer (http/answer-memo.ts).
   */
  holds(values: readonly unknown[], token: string | null): boolean
}

export interface CredentialStore {
  listCredentials(accountId: string): Promise<CredentialRow[]>
  /** Adds a full credential unless the account already has `max` of them; exact under concurrency. */
  addCredentialWithinLimit(
    accountId: string,
    credential: StoredCredential,
    max: number,
  ): Promise<CredentialRow | 'limit'>
  /**
   * Adds a scoped credential for one subdomain of the account (or, with `subdomainId` null, for
   * all of them), unless that subdomain (or the account, account-wide) already has `max` of this
   * scope; null when the subdomain is not the account's. Exact under concurrency.
   */
  addScopedCredential(
    accountId: string,
    scope: Exclude<CredentialScope, 'full'>,
    subdomainId: number | null,
    credential: StoredCredential,
    max: number,
  ): Promise<CredentialRow | 'limit' | null>
  deleteCredential(accountId: string, id: string): Promise<boolean>
  replaceCredentialSecret(accountId: string, id: string, secretHash: string): Promise<CredentialRow | null>
}

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

export interface AuditEntry {
  accountId: string | null
  credentialId: string | null
  ip: string | null
  operation: string
  target: string | null
  outcome: string
  /** `api` (a credential; the default) or `web` (a back-office session). */
  via?: 'api' | 'web'
}
export interface AuditRow extends Required<AuditEntry> {
  id: string
  createdAt: Date
}

export interface AuditStore {
  audit(entry: AuditEntry): Promise<void>
  /** The account's entries, newest first; `beforeId` pages back. */
  listAudit(accountId: string, options: { limit: number; beforeId?: string | undefined }): Promise<AuditRow[]>
}

// --- people: the back office's sign-in, sessions and mailed links (domain/people.ts) ----------

/** Single-use links: `invite` (may sign up while REGISTRATION=invite), `signup`, `reset`. */
export type WebTokenKind = 'invite' | 'signup' | 'reset'
export interface WebTokenRow {
  kind: WebTokenKind
  email: string | null
  accountId: string | null
  /** A signup token made through an invitation: the invitation's hash (used up with it). */
  inviteHash: string | null
  expiresAt: Date
}

export interface PeopleStore {
  /** The account of an address (case-insensitive) and its password hash; null hash: none set yet. */
  findLogin(email: string): Promise<{ account: AccountRow; passwordHash: string | null } | null>
  passwordHashOf(accountId: string): Promise<string | null>
  /** Sets the password and ends every session of the account, in one transaction. */
  setPassword(accountId: string, passwordHash: string, now: Date): Promise<void>
  createToken(tokenHash: string, token: WebTokenRow): Promise<void>
  /** The token when it is of this kind, unused and unexpired (nothing is spent). */
  peekToken(tokenHash: string, kind: WebTokenKind, now: Date): Promise<WebTokenRow | null>
  /**
   * Completes a sign-up in one transaction: spends the signup token and the invitation it came
   * through (each single-use, exact under concurrency) and creates the account with its password.
   */
  completeSignup(input: {
    tokenHash: string
    now: Date
    passwordHash: string
    quotaTotal: number
    balanceCents: number
  }): Promise<AccountRow | 'invalid' | 'taken'>
  /** Spends a reset token and sets the password (ending every session), in one transaction; null: no such token. */
  completeReset(tokenHash: string, now: Date, passwordHash: string): Promise<string | null>
}

export interface WebSessionStore {
  createSession(session: {
    idHash: string
    accountId: string
    ip: string | null
    now: Date
    expiresAt: Date
  }): Promise<void>
  /** The live session (idle and absolute limits checked in the query), its last use moved to `now`. */
  resumeSession(
    idHash: string,
    now: Date,
    idleMs: number,
  ): Promise<{ accountId: string; createdAt: Date; account: AccountRow } | null>
  deleteSession(idHash: string): Promise<void>
}

/** Outgoing mail (an SMTP transport, or the log when none is configured). */
export interface Mailer {
  send(message: { to: string; subject: string; text: string }): Promise<void>
}

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
