import type { AccountRow, CredentialRow, CredentialScope } from './rows.ts'

// Accounts and their credentials, and how authentication finds them (domain/accounts.ts,
// domain/credentials.ts).

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
