import { ApiFailure } from './api.ts'
import { formatDate, formatWait, t } from './i18n.ts'
import { describeFailure } from './ui.tsx'

/** What went wrong on the pickup page, as the person reads it. */
export type Problem = {
  kind: 'format' | 'notFound' | 'rateLimited' | 'exhausted' | 'expired' | 'other'
  text: string
}

export function problemOf(err: unknown, length: number, byLink = false): Problem {
  if (err instanceof ApiFailure) {
    if (err.code === 'share_not_found')
      return { kind: 'notFound', text: t(byLink ? 'pickup.linkNotFound' : 'pickup.notFound') }
    // Used up and expired are not wrong codes: they say so (and spend no guessing budget).
    if (err.code === 'share_used_up') return { kind: 'exhausted', text: t('pickup.usedUp') }
    if (err.code === 'share_expired')
      return {
        kind: 'expired',
        text: t('pickup.expired', { date: formatDate(String(err.details.expiresAt ?? '')) }),
      }
    if (err.code === 'rate_limit_exceeded')
      return {
        kind: 'rateLimited',
        // The global throttle is everyone's, not this network's doing.
        text: t(err.details.reason === 'throttle' ? 'pickup.throttled' : 'pickup.rateLimited', {
          wait: formatWait(err.retryAfter ?? 60),
        }),
      }
    if (err.code === 'bad_request') return { kind: 'format', text: t('pickup.badFormat', { length }) }
  }
  return { kind: 'other', text: describeFailure(err) }
}
