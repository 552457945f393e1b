import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { ShareEnd, ShareLookup, ShareRecord, SharesPort } from './ports.ts'
import type { SettingsService, TSettings } from './settings.ts'
import type { SharePasswords, ShareUnlock } from './share-passwords.ts'

/**
 * What taking a share and downloading from it have in common: the answers for a share that
 * ended or never was, and the password check of a protected share.
 */

/** No downloads left: a counted share at zero (take answers 404; only open transfers go on). */
export const isUsedUp = (share: ShareRecord) => share.remaining === 0 || share.exhaustedAt !== null

export const shareUsedUp = () =>
  new ApiError('share_used_up', 'the downloads of this share are used up', { reason: 'used_up' })

export const endedError = (end: ShareEnd) =>
  end.reason === 'expired'
    ? new ApiError('share_expired', `this share expired on ${end.expiresAt.toISOString()}`, {
        reason: 'expired',
        expiresAt: end.expiresAt.toISOString(),
      })
    : shareUsedUp()

export const shareNotFound = () => new ApiError('share_not_found', 'no share has this pickup code or link')

/** The error for a code or link that opens no live share: used up, expired, or not found. */
export async function endedOrNotFound(
  d: { shares: Pick<SharesPort, 'endOf'>; clock: Clock },
  by: ShareLookup,
): Promise<ApiError> {
  const end = await d.shares.endOf(by, d.clock.now())
  return end ? endedError(end) : shareNotFound()
}

/**
 * A protected share's password or grant (SharePasswords); a share without a password costs
 * nothing here, not even the settings' read.
 */
export async function unlockShare(
  d: { passwords: SharePasswords; settings: SettingsService },
  share: ShareRecord,
  unlock: ShareUnlock | undefined,
  address: string,
  s?: TSettings,
): Promise<void> {
  if (share.passwordHash === null) return
  await d.passwords.unlock(share, unlock ?? {}, address, s ?? (await d.settings.get()))
}
