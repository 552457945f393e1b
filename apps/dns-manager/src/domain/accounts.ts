import { hashToken, ipAllowed, safeEqual } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { DomainDeps } from './deps.ts'
import './errors.ts'
import type { AccountStore, CredentialLookup, CredentialScope } from './ports.ts'
import { ACME_ONLY_MESSAGE } from './acme.ts'

/** Who is calling: the outcome of the authentication steps of the pipeline. */
export interface Principal {
  accountId: string
  credentialId: string
  apiKey: string
  ip: string | undefined
  /** The account as authentication read it, in this request. */
  account: { quotaTotal: number; balanceCents: number }
  /** What the credential may do (see `scopes`, and acme.ts for what an `acme` one may). */
  scope: CredentialScope
  /** The subdomain a scoped credential acts on. */
  scopeSubdomainId: number | null
  /**
   * The account's version tokens as this request read them before any database read, when they
   * vouch for what it reads (ports.ts, ViewCache): its reads may be answered from, and kept in,
   * the account's views cache. Absent or null: straight to the database.
   */
  viewToken?: string | null
  /** `web`: a back-office session (people.ts), not an API credential; `credentialId` is then `web:<account>`. */
  via?: 'api' | 'web'
}

/** The lookup without a cache: straight to the store. */
export function uncachedLookup(accounts: AccountStore): CredentialLookup {
  return {
    readAhead: () => [],
    find: (publicKey) => accounts.findCredential(publicKey),
    touch: (found, now) => accounts.touchCredential(found.credential.id, now),
    vouchedToken: () => null,
  }
}

type AccountDeps = Pick<DomainDeps, 'lookup' | 'guard' | 'clock'>

/**
 * Steps 1–3 of the pipeline: credentials (with the budgets of failed secrets), the API switch,
 * the IP allow list.
 */
export async function authenticate(
  deps: AccountDeps,
  credentials: { key: string; secret: string } | null,
  ip: string | undefined,
  /** The scopes this entry point serves: the API `full` and `acme`; /nic/update `full` and `dyndns`. */
  scopes: readonly CredentialScope[] = ['full', 'acme'],
): Promise<Principal> {
  const { lookup, guard } = deps
  if (!credentials) throw new ApiError('auth_invalid_credentials', 'API key and secret are required')
  // An address past its budget of failures is refused before the database is asked. The same kv
  // command brings back what a cached credential needs to be trusted (its version tokens).
  const attempt = await guard.admit(ip, lookup.readAhead(credentials.key))
  const found = await lookup.find(credentials.key, attempt.readAhead)
  // Hash and compare even for an unknown key, so timing does not tell which keys exist.
  const expected = found?.credential.secretHash ?? hashToken('no such key')
  if (!safeEqual(hashToken(credentials.secret), expected) || !found)
    return guard.failed(attempt, found?.credential.id ?? null)
  await guard.succeeded(attempt, found.credential.id)
  if (!scopes.includes(found.credential.scope))
    throw found.credential.scope === 'acme'
      ? new ApiError('credential_scope_forbidden', ACME_ONLY_MESSAGE)
      : new ApiError(
          'auth_invalid_credentials',
          'this key is an update-only credential (dyndns); it works with /nic/update only',
        )
  if (!found.account.apiAccessEnabled)
    throw new ApiError('api_access_disabled', 'API access is disabled for this account')
  if (!ipAllowed(ip, found.account.ipAllowList))
    throw new ApiError(
      'auth_ip_not_allowed',
      `requests from ${ip ?? 'this address'} are not on the allow list`,
    )
  // last_used_at is kept to the minute: one write per credential per minute, not per request.
  const now = deps.clock.now()
  if (!found.credential.lastUsedAt || now.getTime() - found.credential.lastUsedAt.getTime() > 60_000)
    void lookup.touch(found, now).catch(() => {})
  return {
    accountId: found.account.id,
    credentialId: found.credential.id,
    apiKey: found.credential.publicKey,
    ip,
    account: { quotaTotal: found.account.quotaTotal, balanceCents: found.account.balanceCents },
    scope: found.credential.scope,
    scopeSubdomainId: found.credential.subdomainId,
    viewToken: lookup.vouchedToken(attempt.readAhead),
  }
}

/** The account row was read by authentication a moment ago, in this request; only the count is new. */
async function quotaOf(deps: Pick<DomainDeps, 'accounts'>, p: Principal) {
  const used = await deps.accounts.countSubdomains(p.accountId)
  const total = p.account.quotaTotal
  return { used, total, available: Math.max(0, total - used) }
}

type ViewDeps = Pick<DomainDeps, 'accounts' | 'views'>

export function verifyCredentials(deps: ViewDeps, p: Principal) {
  return deps.views.read(p.accountId, p.viewToken ?? null, `verify ${p.apiKey}`, async () => ({
    value: { account: { api_key: p.apiKey, quota: await quotaOf(deps, p) } },
  }))
}

/** The principal's account (quota, balance) is under the same token as the cached answer. */
export function quota(deps: ViewDeps, p: Principal) {
  return deps.views.read(p.accountId, p.viewToken ?? null, 'quota', async () => ({
    value: { quota: await quotaOf(deps, p), balance_cents: p.account.balanceCents },
  }))
}
