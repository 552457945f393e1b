import { hashToken, ipAllowed, sameDigest } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { DomainDeps } from './deps.ts'
import './errors.ts'
import type {
  AccountStore,
  CredentialLookup,
  CredentialScope,
  CredentialWithAccount,
  KvRead,
} from './ports.ts'
import { ACME_ONLY_MESSAGE } from './acme-scope.ts'
import type { Principal } from './principal.ts'

/** The lookup without a cache: straight to the store. */
export function uncachedLookup(accounts: AccountStore): CredentialLookup {
  return {
    readAhead: () => [],
    find: (publicKey) => accounts.findCredential(publicKey),
    touch: (found, now) => accounts.touchCredential(found.credential.id, now),
    vouchedToken: () => null,
    held: () => undefined,
  }
}

type AccountDeps = Pick<DomainDeps, 'lookup' | 'guard' | 'clock'>

/** What an unknown key's secret is compared with. */
const NO_SUCH_KEY = hashToken('no such key')

/**
 * Steps 1–3 of the pipeline: credentials (with the budgets of failed secrets), the API switch,
 * the IP allow list.
 *
 * `ride`: a caller that spends rate-limit points right after (pipeline.ts, `admit`) may have the
 * guard's kv command do it, one round trip where there were two. It is asked only for a
 * credential this process holds, presented with the secret it holds, that would pass every check
 * below as it was last read: so a caller without the secret, from an address off the allow list,
 * or of an account with API access off spends nothing of the credential's. Should the database
 * then tell otherwise (a change since the copy was read), the points stay spent and the request
 * is refused as always; the copy is then the new one, and the next request asks nothing ahead.
 */
export async function authenticate(
  deps: AccountDeps,
  credentials: { key: string; secret: string } | null,
  ip: string | undefined,
  /** The scopes this entry point serves: the API `full` and `acme`; /nic/update `full` and `dyndns`. */
  scopes: readonly CredentialScope[] = ['full', 'acme'],
  ride?: (credentialId: string) => KvRead | undefined,
): Promise<Principal> {
  const { lookup, guard } = deps
  if (!credentials) throw new ApiError('auth_invalid_credentials', 'API key and secret are required')
  const secretHash = hashToken(credentials.secret)
  const held = ride ? lookup.held(credentials.key) : undefined
  const heldSecret = held !== undefined && sameDigest(secretHash, held.credential.secretHash)
  const read =
    ride && held && heldSecret && !refusalOf(held, ip, scopes) ? ride(held.credential.id) : undefined
  // An address past its budget of failures is refused before the database is asked. The same kv
  // command brings back what a cached credential needs to be trusted (its version tokens).
  const attempt = await guard.admit(ip, lookup.readAhead(credentials.key), read)
  const found = await lookup.find(credentials.key, attempt.readAhead)
  // Compare even for an unknown key, so timing does not tell which keys exist. The copy held
  // before, when the stored secret is still its own, was compared above.
  const expected = found?.credential.secretHash ?? NO_SUCH_KEY
  const right =
    held !== undefined && expected === held.credential.secretHash
      ? heldSecret
      : sameDigest(secretHash, expected)
  if (!right || !found) return guard.failed(attempt, found?.credential.id ?? null)
  await guard.succeeded(attempt, found.credential.id)
  const refusal = refusalOf(found, ip, scopes)
  if (refusal) throw refusal
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

/** Why a credential whose secret is right may not call an entry point serving `scopes` from `ip`. */
function refusalOf(
  found: CredentialWithAccount,
  ip: string | undefined,
  scopes: readonly CredentialScope[],
): ApiError | null {
  if (!scopes.includes(found.credential.scope))
    return found.credential.scope === 'acme'
      ? new ApiError('credential_scope_forbidden', ACME_ONLY_MESSAGE)
      : new ApiError(
          'auth_invalid_credentials',
          'this key is an update-only credential (dyndns); it works with /nic/update only',
        )
  if (!found.account.apiAccessEnabled)
    return new ApiError('api_access_disabled', 'API access is disabled for this account')
  if (!ipAllowed(ip, found.account.ipAllowList))
    return new ApiError(
      'auth_ip_not_allowed',
      `requests from ${ip ?? 'this address'} are not on the allow list`,
    )
  return null
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
