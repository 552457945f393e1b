import { generateToken, hashPassword } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError, DEPENDENCY_RETRY_AFTER_SECONDS } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { addressKey, type RateLimiter, rateLimitError } from '@quartet/core/rate-limit'
import './errors.ts'
import type { AccountStore, AuditStore, Mailer, PeopleStore, WebSessionStore } from './ports.ts'

// What every operation on the back office's people (people.ts) shares: its settings and
// dependencies, the password rule, the attempt limits, mail and the audit of page actions.

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
export const SIGNUP_LINK_MS = 24 * 3_600_000
export const RESET_LINK_MS = 3_600_000
export const PASSWORD_MIN = 10

/** A link's token: 256 random bits; only its SHA-256 is stored. */
export const newToken = () => generateToken('', 32)

/** Hashing a password nobody has, so an unknown address costs the same time as a wrong password. */
let dummyHash: Promise<string> | undefined
export const dummy = () => (dummyHash ??= hashPassword('no such account, no such password'))

export function checkPasswordRules(password: string, field = 'password') {
  if (password.length < PASSWORD_MIN)
    throw new ApiError('bad_request', `${field}: must be at least ${PASSWORD_MIN} characters`, {
      field,
      min: PASSWORD_MIN,
    })
}

export async function spendAttempt(deps: PeopleDeps, what: string, ip: string | undefined, email: string) {
  const [byAddress, byAccount] = await Promise.all([
    deps.limits.address.consume(`${what}:${addressKey(ip, deps.settings.ipv6Prefix)}`),
    deps.limits.account.consume(`${what}:${email.toLowerCase()}`),
  ])
  if (!byAddress.allowed) throw rateLimitError(byAddress, `too many ${what} attempts from this address`)
  if (!byAccount.allowed) throw rateLimitError(byAccount, `too many ${what} attempts for this account`)
}

export async function sendMail(deps: PeopleDeps, message: { to: string; subject: string; text: string }) {
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

export async function auditWeb(
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
