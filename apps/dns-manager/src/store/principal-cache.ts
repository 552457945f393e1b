import { randomBytes } from 'node:crypto'
import type { KeyValueStore } from '@quartet/core/kv'
import { VersionedCache } from '@quartet/core/versioned-cache'
import type { CredentialLookup, CredentialWithAccount, ReadAhead, Stores } from '../domain/ports.ts'

/**
 * Version tokens of accounts, in kv: every committed change to a credential or to its account
 * (secret regenerated, credential deleted, API access switched, IP allow list, quota, balance,
 * scope), or to what the account's views show (its subdomains and records), gives the account a
 * new random token before the change is answered, so a process that cached the account's
 * credentials or views under the old token sees that they are out of date on its next request,
 * whichever replica, job or CLI run made the change. One more token, for every
 * account at once, is there for changes that are not one account's.
 *
 * Why a cached principal is never older than a change the caller could know about: a reader
 * reads the tokens first and the database second, a writer commits first and replaces the token
 * second; core's versioned cache (packages/core/src/versioned-cache.ts) keeps the reader's answer
 * under the tokens it read, and says why that is enough.
 * key-info's key record cache works the same way (apps/key-info/src/store/key-record-cache.ts).
 */
export interface PrincipalVersions {
  /** The kv keys of the tokens a cached principal of this account is valid under. */
  keysOf(accountId: string): string[]
  /** Gives an account (and the whole) a token, unless a writer or another reader got there first. */
  start(accountId: string): Promise<void>
  /** Replaces each account's token, after a committed change. */
  bump(accountIds: Iterable<string>): Promise<void>
  /** Replaces the token every cached principal depends on. */
  bumpAll(): Promise<void>
  /** Calls `listener` when kv may have lost tokens (its connection came back). */
  onLost(listener: () => void): void
}

/** Tokens expire: an expired one only costs the next request one database read. */
const TOKEN_TTL_MS = 24 * 60 * 60_000

export const accountVersionKey = (accountId: string) => `principal-version:${accountId}`
/** Not an account id (those are UUIDs). */
export const ALL_VERSION_KEY = 'principal-version:all'

export function createPrincipalVersions(kv: KeyValueStore): PrincipalVersions {
  const fresh = () => randomBytes(12).toString('base64url')
  return {
    keysOf: (accountId) => [ALL_VERSION_KEY, accountVersionKey(accountId)],
    async start(accountId) {
      await Promise.all([
        kv.setIfAbsent(ALL_VERSION_KEY, fresh(), TOKEN_TTL_MS),
        kv.setIfAbsent(accountVersionKey(accountId), fresh(), TOKEN_TTL_MS),
      ])
    },
    async bump(accountIds) {
      await Promise.all(
        [...new Set(accountIds)].map((id) => kv.set(accountVersionKey(id), fresh(), TOKEN_TTL_MS)),
      )
    },
    async bumpAll() {
      await kv.set(ALL_VERSION_KEY, fresh(), TOKEN_TTL_MS)
    },
    onLost: (listener) => kv.onReconnect(listener),
  }
}

export interface PrincipalCacheOptions {
  /**
   * How long a cached principal may serve at most, in ms. Bounds how long a change that did not
   * go through this service's stores (SQL by hand, a token replacement lost to a kv outage)
   * stays unseen.
   */
  maxAgeMs: number
  /** How many credentials one process keeps; the least recently used go first. */
  maxEntries?: number
  /** Milliseconds now (the app's clock, so tests can age entries). */
  now: () => number
}

/**
 * Authentication's lookup, cached per process under the account's version token (core's
 * VersionedCache). A hit costs no round trip of its own: the tokens come back with the
 * failed-secret guard's kv read, which every authentication makes anyway (`readAhead`). Unknown
 * keys are not cached; a key whose tokens cannot be read is looked up in the database.
 * Misses of one key under one token at once share one lookup.
 */
export function cachedCredentialLookup(
  accounts: Pick<Stores, 'findCredential' | 'touchCredential'>,
  versions: PrincipalVersions,
  options: PrincipalCacheOptions,
): CredentialLookup {
  // By public key; an entry kept without a token is there only to name the account whose tokens
  // the next request reads ahead.
  const principals = new VersionedCache<CredentialWithAccount | null>({
    maxAgeMs: options.maxAgeMs,
    maxEntries: options.maxEntries ?? 10_000,
    now: options.now,
    onLost: (listener) => versions.onLost(listener),
  })
  const tokenOf = (values: Array<string | null>): string | null =>
    values.length === 2 && values[0] !== null && values[1] !== null ? `${values[0]} ${values[1]}` : null

  return {
    readAhead(publicKey) {
      const kept = principals.peek(publicKey)
      return kept?.value ? versions.keysOf(kept.value.account.id) : []
    },

    async find(publicKey, readAhead: ReadAhead) {
      const cached = principals.peek(publicKey)
      const token = cached && readAhead !== 'unreadable' ? tokenOf(readAhead.values) : null
      const hit = principals.get(publicKey, token)
      if (hit) return hit
      const lookup = principals.load(publicKey, token, () => accounts.findCredential(publicKey))
      const found = await lookup.read
      // Joined a lookup out already: the one who began it keeps what it found.
      if (lookup.joined) return found
      principals.forget(publicKey)
      if (!found || readAhead === 'unreadable') return found
      // A public key belongs to one account for good, so the tokens read ahead for the entry
      // this replaces are the account's own: read before the database, they vouch for it.
      const vouched =
        token !== null &&
        cached?.value?.account.id === found.account.id &&
        !principals.lostSince(readAhead.askedAt)
          ? token
          : null
      principals.keep(publicKey, vouched, found, lookup.began)
      // Without a token read ahead nothing vouches for this copy: the entry only tells the next
      // request which tokens to read with the guard's, and the token made now lets it cache.
      if (vouched === null) await versions.start(found.account.id).catch(() => undefined)
      return found
    },

    held: (publicKey) => principals.peek(publicKey)?.value ?? undefined,

    vouchedToken(readAhead) {
      return readAhead !== 'unreadable' && !principals.lostSince(readAhead.askedAt)
        ? tokenOf(readAhead.values)
        : null
    },

    async touch(found, now) {
      await accounts.touchCredential(found.credential.id, now)
      // The copy other requests share learns it too, or every request would write it again.
      const kept = principals.peek(found.credential.publicKey)
      if (kept?.value?.credential.id === found.credential.id)
        principals.keep(
          found.credential.publicKey,
          kept.token,
          { ...kept.value, credential: { ...kept.value.credential, lastUsedAt: now } },
          kept.cachedAt,
        )
    },
  }
}

/**
 * For every store call: which accounts it may have changed, for their principals (credentials,
 * the account row) or their views (quota count, subdomain and record pages: store/view-cache.ts),
 * from its arguments (and result, or a read made before it). `null`: it changes nothing either
 * holds. Exhaustive over the stores, so a new store method does not typecheck until someone
 * decides whether it changes what an account's cached copies hold: the table is where that
 * decision is written.
 */
type Rule<K extends keyof Stores> = Stores[K] extends (...args: infer A) => Promise<infer R>
  ? {
      /** Read before the call (the accounts of rows the call removes). */
      before?: (inner: Stores, args: A) => Promise<string[]>
      accounts: (args: A, result: R, before: string[]) => Array<string | null | undefined> | 'all'
    } | null
  : never

const accountOfSubdomain = async (inner: Stores, id: number): Promise<string[]> => {
  const s = await inner.getSubdomain(null, id)
  return s ? [s.accountId] : []
}

export const PRINCIPAL_CHANGES: { [K in keyof Stores]-?: Rule<K> } = {
  ping: null,
  // accounts
  findCredential: null,
  // last_used_at is not decided on; the cache learns it through touch()
  touchCredential: null,
  // a new account has no credential anyone has looked up
  createAccount: null,
  updateAccount: { accounts: ([id], row) => [row && id] },
  creditBalance: { accounts: ([id], row) => [row && id] },
  getAccount: null,
  countSubdomains: null,
  // credentials
  listCredentials: null,
  // a new credential was never looked up; its account's other credentials are unchanged
  addCredentialWithinLimit: null,
  addScopedCredential: null,
  deleteCredential: { accounts: ([accountId], deleted) => [deleted ? accountId : null] },
  replaceCredentialSecret: { accounts: ([accountId], row) => [row && accountId] },
  // zones
  listZones: null,
  findZone: null,
  upsertZone: null,
  // subdomains: creating and renewing charge the balance, and every change below shows in the
  // account's pages (a row's updated_at moves with its DNS version)
  createSubdomain: { accounts: ([input], outcome) => [outcome.ok ? input.accountId : null] },
  getSubdomain: null,
  findSubdomainByName: null,
  listSubdomains: null,
  renewSubdomain: { accounts: ([accountId], renewed) => [renewed && accountId] },
  beginRelease: {
    accounts: (_args, begun) => [typeof begun === 'object' && begun ? begun.subdomain.accountId : null],
  },
  // the row goes, and the scoped credentials of the subdomain with it (ON DELETE CASCADE)
  finishRelease: { before: async (inner, [id]) => accountOfSubdomain(inner, id), accounts: (_a, _r, b) => b },
  abortRelease: { before: async (inner, [id]) => accountOfSubdomain(inner, id), accounts: (_a, _r, b) => b },
  staleReleasing: null,
  expiredBefore: null,
  // records: the pages show them; convergence, leases, audit: nothing either cache holds
  listRecords: null,
  listOwnRecords: null,
  getRecord: null,
  beginRecordChange: { accounts: ([accountId], begun) => [begun && accountId] },
  // a confirm deletes the rows of pending deletes: their accounts are read first
  settleRecords: { before: (inner, [ids]) => inner.accountsOfRecords(ids), accounts: (_a, _r, b) => b },
  accountsOfRecords: null,
  stalePending: null,
  desiredRRsets: null,
  ownerStamps: null,
  zoneSnapshot: null,
  addRepairs: null,
  dueRepairs: null,
  clearRepair: null,
  deferRepair: null,
  acquireLease: null,
  releaseLease: null,
  audit: null,
  listAudit: null,
  // the back office: passwords, sign-up and reset links, page sessions. None touches what an
  // API credential's principal holds (a new account has no credential anyone looked up; the
  // back office switches API access and allow lists through updateAccount, keys through the
  // credential calls above).
  findLogin: null,
  passwordHashOf: null,
  setPassword: null,
  createToken: null,
  peekToken: null,
  completeSignup: null,
  completeReset: null,
  createSession: null,
  resumeSession: null,
  deleteSession: null,
}

/**
 * The stores, replacing the version token of every account a committed call changed (per
 * PRINCIPAL_CHANGES) before the call returns, so the domain operation that made the change
 * answers only after every replica's cache is out of date. A token that cannot be replaced (kv
 * down) is reported; cached principals then serve at most PRINCIPAL_CACHE_MAX_AGE_MS longer.
 */
export function versionedStores(
  inner: Stores,
  versions: PrincipalVersions,
  onBumpFailed: (err: unknown, accounts: string[] | 'all') => void,
): Stores {
  const wrapped: Record<string, unknown> = { ...inner }
  for (const name of Object.keys(PRINCIPAL_CHANGES) as Array<keyof Stores>) {
    const rule = PRINCIPAL_CHANGES[name] as {
      before?: (inner: Stores, args: unknown[]) => Promise<string[]>
      accounts: (
        args: unknown[],
        result: unknown,
        before: string[],
      ) => Array<string | null | undefined> | 'all'
    } | null
    if (!rule) continue
    const call = (inner[name] as (...args: unknown[]) => Promise<unknown>).bind(inner)
    wrapped[name] = async (...args: unknown[]) => {
      const before = rule.before ? await rule.before(inner, args) : []
      const result = await call(...args)
      const changed = rule.accounts(args, result, before)
      if (changed === 'all') await versions.bumpAll().catch((err: unknown) => onBumpFailed(err, 'all'))
      else {
        const ids = changed.filter((id): id is string => typeof id === 'string')
        if (ids.length) await versions.bump(ids).catch((err: unknown) => onBumpFailed(err, ids))
      }
      return result
    }
  }
  return wrapped as unknown as Stores
}
