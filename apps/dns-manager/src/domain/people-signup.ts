import { hashPassword, hashToken } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import {
  checkPasswordRules,
  auditWeb,
  newToken,
  type PeopleDeps,
  type PeopleSettings,
  sendMail,
  SIGNUP_LINK_MS,
  spendAttempt,
} from './people-common.ts'
import { startSession } from './people-sessions.ts'
import { iso } from './views.ts'

// Sign-up through a mailed link (people.ts), and the operator's invitations.

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
