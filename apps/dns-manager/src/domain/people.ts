import { generateToken, hashPassword, hashToken, isValidCidrOrIp, verifyPassword } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError, DEPENDENCY_RETRY_AFTER_SECONDS } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { addressKey, type RateLimiter, rateLimitError } from '@quartet/core/rate-limit'
import type { Principal } from './principal.ts'
import './errors.ts'
import type { AccountRow, AccountStore, AuditStore, Mailer, PeopleStore, WebSessionStore } from './ports.ts'
import { iso } from './views.ts'

/**
 * The back office's people (issue 15): sign-up through a mailed link, sign-in with a password,
 * sessions, password change and reset. A session becomes a Principal like an API credential's,
 * and every page action then runs the same operations as REST/JSON-RPC/GraphQL; what only a
 * person may do (the API switch, the IP allow list, the audit log) is here.
 */

export type Registration = 'open' | 'invite' | 'closed'

export interface PeopleSettings {
  registration: Registration
  /** The site as people reach it; mailed links start with it. */
  publicUrl: string
  signupQuota: number
  signupBalanceCents: number
  sessionIdleMs: number
  ipv6Prefix: number
}

export interface PeopleDeps {
  people: PeopleStore
  sessions: WebSessionStore
  accounts: Pick<AccountStore, 'updateAccount' | 'getAccount'>
  audit: AuditStore
  mailer: Mailer
  clock: Clock
  logger: Logger
  settings: PeopleSettings
  /** Sign-in and reset attempts per client address, and per account (by address). */
  limits: { address: RateLimiter; account: RateLimiter }
}

export const SESSION_ABSOLUTE_MS = 12 * 3_600_000
const SIGNUP_LINK_MS = 24 * 3_600_000
const RESET_LINK_MS = 3_600_000
export const PASSWORD_MIN = 10

/** A link's token: 256 random bits; only its SHA-256 is stored. */
const newToken = () => generateToken('', 32)

/** Hashing a password nobody has, so an unknown address costs the same time as a wrong password. */
let dummyHash: Promise<string> | undefined
const dummy = () => (dummyHash ??= hashPassword('no such account, no such password'))

function checkPasswordRules(password: string, field = 'password') {
  if (password.length < PASSWORD_MIN)
    throw new ApiError('bad_request', `${field}: must be at least ${PASSWORD_MIN} characters`, {
      field,
      min: PASSWORD_MIN,
    })
}

async function spendAttempt(deps: PeopleDeps, what: string, ip: string | undefined, email: string) {
  const [byAddress, byAccount] = await Promise.all([
    deps.limits.address.consume(`${what}:${addressKey(ip, deps.settings.ipv6Prefix)}`),
    deps.limits.account.consume(`${what}:${email.toLowerCase()}`),
  ])
  if (!byAddress.allowed) throw rateLimitError(byAddress, `too many ${what} attempts from this address`)
  if (!byAccount.allowed) throw rateLimitError(byAccount, `too many ${what} attempts for this account`)
}

async function sendMail(deps: PeopleDeps, message: { to: string; subject: string; text: string }) {
  try {
    await deps.mailer.send(message)
  } catch (err) {
    deps.logger.error({ err: (err as Error).message }, 'mail could not be sent')
    throw new ApiError('mail_unavailable', 'the mail could not be sent; try again in a moment', undefined, {
      headers: { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_SECONDS) },
      cause: err,
    })
  }
}

async function auditWeb(
  deps: Pick<PeopleDeps, 'audit'>,
  accountId: string | null,
  ip: string | undefined,
  operation: string,
  outcome = 'ok',
  target: string | null = null,
) {
  await deps.audit
    .audit({ accountId, credentialId: null, ip: ip ?? null, operation, target, outcome, via: 'web' })
    .catch(() => {})
}

// --- sign-up ----------------------------------------------------------------------------------

/**
 * Step 1 of a sign-up: mails a link to the address. The answer is the same whether or not the
 * address has an account (that one gets a mail saying so, with the way to reset its password),
 * so the form tells nobody which addresses are registered.
 */
export async function startSignup(
  deps: PeopleDeps,
  input: { email: string; invite?: string | undefined },
  ip: string | undefined,
) {
  const { settings } = deps
  const email = input.email.toLowerCase()
  if (settings.registration === 'closed')
    throw new ApiError('registration_closed', 'sign-up is closed on this service; ask its operator')
  let inviteHash: string | null = null
  if (settings.registration === 'invite') {
    if (!input.invite)
      throw new ApiError('invite_required', 'sign-up needs an invitation link from the operator', {
        field: 'invite',
      })
    inviteHash = hashToken(input.invite)
    if (!(await deps.people.peekToken(inviteHash, 'invite', deps.clock.now())))
      throw new ApiError('link_invalid', 'this invitation is not valid: it was used, or it expired', {
        field: 'invite',
      })
  }
  await spendAttempt(deps, 'signup', ip, email)
  const existing = await deps.people.findLogin(email)
  if (existing) {
    await sendMail(deps, {
      to: email,
      subject: 'You already have an account',
      text: `Someone (maybe you) asked to sign up with this address, which already has an account.\n\nTo sign in: ${settings.publicUrl}/account/signin\nForgot the password? ${settings.publicUrl}/account/reset\n\nIf it was not you, ignore this mail.\n`,
    })
  } else {
    const token = newToken()
    const now = deps.clock.now()
    await deps.people.createToken(hashToken(token), {
      kind: 'signup',
      email,
      accountId: null,
      inviteHash,
      expiresAt: new Date(now.getTime() + SIGNUP_LINK_MS),
    })
    await sendMail(deps, {
      to: email,
      subject: 'Finish signing up',
      text: `Open this link within 24 hours to choose a password and finish signing up:\n\n${settings.publicUrl}/account/signup/complete?token=${token}\n\nIf you did not ask for it, ignore this mail.\n`,
    })
  }
  await auditWeb(deps, existing?.account.id ?? null, ip, 'web.signup.start')
  return { sent: true as const }
}

/** What the finishing page shows before a password is chosen; 400 link_invalid when unusable. */
export async function signupLink(deps: PeopleDeps, input: { token: string }) {
  const token = await deps.people.peekToken(hashToken(input.token), 'signup', deps.clock.now())
  if (!token?.email) throw new ApiError('link_invalid', 'this link is not valid: it was used, or it expired')
  return { email: token.email, expires_at: iso(token.expiresAt) }
}

/** Step 2: the mailed link's token and a password make the account; the browser is signed in. */
export async function completeSignup(
  deps: PeopleDeps,
  input: { token: string; password: string },
  ip: string | undefined,
) {
  checkPasswordRules(input.password)
  const passwordHash = await hashPassword(input.password)
  const outcome = await deps.people.completeSignup({
    tokenHash: hashToken(input.token),
    now: deps.clock.now(),
    passwordHash,
    quotaTotal: deps.settings.signupQuota,
    balanceCents: deps.settings.signupBalanceCents,
  })
  if (outcome === 'invalid')
    throw new ApiError('link_invalid', 'this link is not valid: it was used, or it expired')
  if (outcome === 'taken')
    throw new ApiError('account_exists', 'this address already has an account: sign in or reset the password')
  await auditWeb(deps, outcome.id, ip, 'web.signup.complete')
  return startSession(deps, outcome, ip)
}

/** An invitation link for REGISTRATION=invite (the operator's CLI makes it). */
export async function createInvite(
  deps: Pick<PeopleDeps, 'people' | 'clock'> & { settings: Pick<PeopleSettings, 'publicUrl'> },
  input: { validHours: number },
) {
  const token = newToken()
  const expiresAt = new Date(deps.clock.now().getTime() + input.validHours * 3_600_000)
  await deps.people.createToken(hashToken(token), {
    kind: 'invite',
    email: null,
    accountId: null,
    inviteHash: null,
    expiresAt,
  })
  return {
    invite_url: `${deps.settings.publicUrl}/account/signup?invite=${token}`,
    expires_at: iso(expiresAt),
  }
}

// --- sessions ---------------------------------------------------------------------------------

async function startSession(deps: PeopleDeps, account: AccountRow, ip: string | undefined) {
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

// --- password reset ---------------------------------------------------------------------------

/**
 * Mails a reset link when the address has an account (one the CLI made, without a password,
 * sets its first password this way). The answer is the same either way.
 */
export async function requestReset(deps: PeopleDeps, input: { email: string }, ip: string | undefined) {
  const email = input.email.toLowerCase()
  await spendAttempt(deps, 'reset', ip, email)
  const login = await deps.people.findLogin(email)
  if (login) {
    const token = newToken()
    await deps.people.createToken(hashToken(token), {
      kind: 'reset',
      email,
      accountId: login.account.id,
      inviteHash: null,
      expiresAt: new Date(deps.clock.now().getTime() + RESET_LINK_MS),
    })
    await sendMail(deps, {
      to: email,
      subject: 'Set your password',
      text: `Open this link within an hour to set a new password:\n\n${deps.settings.publicUrl}/account/reset/complete?token=${token}\n\nEvery signed-in browser will be signed out. If you did not ask for it, ignore this mail.\n`,
    })
  }
  await auditWeb(deps, login?.account.id ?? null, ip, 'web.reset.request')
  return { sent: true as const }
}

export async function completeReset(
  deps: PeopleDeps,
  input: { token: string; password: string },
  ip: string | undefined,
) {
  checkPasswordRules(input.password)
  const accountId = await deps.people.completeReset(
    hashToken(input.token),
    deps.clock.now(),
    await hashPassword(input.password),
  )
  if (!accountId) throw new ApiError('link_invalid', 'this link is not valid: it was used, or it expired')
  await auditWeb(deps, accountId, ip, 'web.reset.complete')
  return { reset: true as const }
}

// --- what only the holder may change ----------------------------------------------------------

/**
 * The account's settings: the API access switch (the API answers 403 api_access_disabled from the
 * next request on) and the IP allow list (IPv4, IPv6, CIDR). The page session itself is not
 * bound by either: the holder must be able to turn the API back on.
 */
export async function updateAccountSettings(
  deps: PeopleDeps,
  p: Principal,
  input: { api_access_enabled?: boolean | undefined; ip_allow_list?: string[] | undefined },
) {
  const data: { apiAccessEnabled?: boolean; ipAllowList?: string[] } = {}
  if (input.api_access_enabled !== undefined) data.apiAccessEnabled = input.api_access_enabled
  if (input.ip_allow_list !== undefined) {
    const list = [...new Set(input.ip_allow_list.map((e) => e.trim()).filter(Boolean))]
    const bad = list.find((e) => !isValidCidrOrIp(e))
    if (bad)
      throw new ApiError('bad_request', `ip_allow_list: ${bad} is not an IPv4/IPv6 address or CIDR range`, {
        field: 'ip_allow_list',
        value: bad,
      })
    data.ipAllowList = list
  }
  const account = await deps.accounts.updateAccount(p.accountId, data)
  if (!account) throw new ApiError('session_required', 'sign in first')
  const changes = [
    ...(data.apiAccessEnabled !== undefined ? [`api_access=${data.apiAccessEnabled ? 'on' : 'off'}`] : []),
    ...(data.ipAllowList ? [`ip_allow_list=${data.ipAllowList.length}`] : []),
  ]
  await auditWeb(deps, p.accountId, p.ip, 'account.settings', 'ok', changes.join(' ') || null)
  return { account: accountView(account, p.ip) }
}

export function accountView(a: AccountRow, ip: string | undefined) {
  return {
    id: a.id,
    email: a.email,
    balance_cents: a.balanceCents,
    quota_total: a.quotaTotal,
    api_access_enabled: a.apiAccessEnabled,
    ip_allow_list: a.ipAllowList,
    your_ip: ip ?? null,
  }
}

export async function accountOf(deps: PeopleDeps, p: Principal) {
  const a = await deps.accounts.getAccount(p.accountId)
  if (!a) throw new ApiError('session_required', 'sign in first')
  return { account: accountView(a, p.ip) }
}

/** What the API and the pages did on the account, from where; newest first. */
export async function auditLog(
  deps: PeopleDeps,
  p: Principal,
  input: { limit: number; before?: string | undefined },
) {
  const rows = await deps.audit.listAudit(p.accountId, { limit: input.limit, beforeId: input.before })
  return {
    entries: rows.map((r) => ({
      id: r.id,
      at: iso(r.createdAt),
      operation: r.operation,
      target: r.target,
      outcome: r.outcome,
      via: r.via,
      ip: r.ip,
      credential_id: r.credentialId,
    })),
    next_before: rows.length === input.limit ? rows[rows.length - 1]!.id : null,
  }
}

type Args<F> = F extends (deps: PeopleDeps, ...args: infer A) => unknown ? A : never

/** The people operations with their dependencies bound (the http adapter and the CLI use it). */
export function createPeopleService(deps: PeopleDeps) {
  const bind =
    <F extends (deps: PeopleDeps, ...args: never[]) => unknown>(f: F) =>
    (...args: Args<F>): ReturnType<F> =>
      (f as unknown as (d: PeopleDeps, ...a: Args<F>) => ReturnType<F>)(deps, ...args)
  return {
    settings: deps.settings,
    startSignup: bind(startSignup),
    signupLink: bind(signupLink),
    completeSignup: bind(completeSignup),
    createInvite: bind(createInvite),
    signIn: bind(signIn),
    signOut: bind(signOut),
    sessionPrincipal: bind(sessionPrincipal),
    changePassword: bind(changePassword),
    requestReset: bind(requestReset),
    completeReset: bind(completeReset),
    updateAccountSettings: bind(updateAccountSettings),
    account: bind(accountOf),
    auditLog: bind(auditLog),
  }
}

export type PeopleService = ReturnType<typeof createPeopleService>
