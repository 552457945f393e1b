import { generateToken, hashPassword, hashToken, verifyPassword } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import {
  auditWeb,
  checkPasswordRules,
  dummy,
  type PeopleDeps,
  SESSION_ABSOLUTE_MS,
  spendAttempt,
} from './people-common.ts'
import type { AccountRow } from './ports.ts'

// The back office's page sessions (people.ts): sign-in with a password, the principal of a
// session cookie, sign-out, and a password change (which starts a new session).

/** Starts a page session for the account: its id goes in the browser's cookie, its hash is stored. */
export async function startSession(deps: PeopleDeps, account: AccountRow, ip: string | undefined) {
  const id = generateToken('', 32)
  const now = deps.clock.now()
  const expiresAt = new Date(now.getTime() + SESSION_ABSOLUTE_MS)
  await deps.sessions.createSession({
    idHash: hashToken(id),
    accountId: account.id,
    ip: ip ?? null,
    now,
    expiresAt,
  })
  return { sessionId: id, expiresAt, accountId: account.id }
}

/**
 * Sign-in: limited per address and per account before the password is checked; an unknown
 * address, an account without a password and a wrong password get the same answer.
 */
export async function signIn(
  deps: PeopleDeps,
  input: { email: string; password: string },
  ip: string | undefined,
) {
  const email = input.email.toLowerCase()
  await spendAttempt(deps, 'signin', ip, email)
  const login = await deps.people.findLogin(email)
  const ok = await verifyPassword(input.password, login?.passwordHash ?? (await dummy()))
  if (!login || !login.passwordHash || !ok) {
    await auditWeb(deps, login?.account.id ?? null, ip, 'web.signin', 'auth_invalid_password')
    throw new ApiError('auth_invalid_password', 'the address or the password is wrong')
  }
  await auditWeb(deps, login.account.id, ip, 'web.signin')
  return startSession(deps, login.account, ip)
}

/** The principal of a session cookie, or null when the session is over (idle, 12 h, signed out). */
export async function sessionPrincipal(
  deps: PeopleDeps,
  sessionId: string | undefined,
  ip: string | undefined,
): Promise<(Principal & { email: string; apiAccessEnabled: boolean; ipAllowList: string[] }) | null> {
  if (!sessionId) return null
  const s = await deps.sessions.resumeSession(
    hashToken(sessionId),
    deps.clock.now(),
    deps.settings.sessionIdleMs,
  )
  if (!s) return null
  return {
    accountId: s.accountId,
    // Not an API credential: rate limits count per account, and the audit says `web`.
    credentialId: `web:${s.accountId}`,
    apiKey: '',
    ip,
    account: { quotaTotal: s.account.quotaTotal, balanceCents: s.account.balanceCents },
    scope: 'full',
    scopeSubdomainId: null,
    via: 'web',
    email: s.account.email,
    apiAccessEnabled: s.account.apiAccessEnabled,
    ipAllowList: s.account.ipAllowList,
  }
}

export async function signOut(deps: PeopleDeps, sessionId: string | undefined, p: Principal | null) {
  if (sessionId) await deps.sessions.deleteSession(hashToken(sessionId))
  if (p) await auditWeb(deps, p.accountId, p.ip, 'web.signout')
}

/** A new password ends every session of the account, this one too; the browser gets a new one. */
export async function changePassword(
  deps: PeopleDeps,
  p: Principal,
  input: { current_password: string; new_password: string },
) {
  checkPasswordRules(input.new_password, 'new_password')
  const account = await deps.accounts.getAccount(p.accountId)
  if (!account) throw new ApiError('session_required', 'sign in first')
  await spendAttempt(deps, 'password', p.ip, account.email)
  const stored = await deps.people.passwordHashOf(p.accountId)
  if (!stored || !(await verifyPassword(input.current_password, stored))) {
    await auditWeb(deps, p.accountId, p.ip, 'web.password.change', 'auth_invalid_password')
    throw new ApiError('auth_invalid_password', 'the current password is wrong', {
      field: 'current_password',
    })
  }
  await deps.people.setPassword(p.accountId, await hashPassword(input.new_password), deps.clock.now())
  await auditWeb(deps, p.accountId, p.ip, 'web.password.change')
  return startSession(deps, account, p.ip)
}
