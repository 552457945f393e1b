import { hashPassword, hashToken } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import {
  auditWeb,
  checkPasswordRules,
  newToken,
  type PeopleDeps,
  RESET_LINK_MS,
  sendMail,
  spendAttempt,
} from './people-common.ts'

// A forgotten (or never set) password, reset through a mailed link (people.ts).

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
