import type { TSettings } from './settings.ts'
import { type CounterHit, limitExceeded, type WindowCounters } from './window-counters.ts'

/** A login attempt let through; settle it with succeeded, failed or abandoned. */
export interface LoginTicket {
  hits: Array<{ key: string; hit: CounterHit }>
  /** Backoff slots this attempt holds (kept after a failure, released after a success). */
  slots: string[]
  windowMs: number
}

/** The one account there is today; the keys leave room for more. */
export const ADMIN_ACCOUNT = 'admin'

/**
 * Against password guessing on POST /api/admin/login (README "Admin API"). Three failure budgets
 * per `loginWindowSeconds`, each spent before the password is checked (so parallel attempts cannot
 * overshoot) and given back by a right password (so logging in spends nothing):
 *
 * - per address (IPv6 by its /64): `loginAttemptsPerIp` failures, then 429 until the window ends;
 * - per account: `loginFailuresPerAccount` failures, then **backoff**: one check at a time, each
 *   failure past the budget doubling the wait before the next (1 s, 2 s, 4 s … at most
 *   `loginBackoffMaxSeconds`), whatever address it comes from;
 * - everyone together: `loginFailuresGlobal` failures, then the same backoff for all accounts.
 *
 * A backoff slows the account's own owner too, but never locks them out for the window: every
 * `loginBackoffMaxSeconds` at most there is a check, and a right password ends the backoff.
 */
export class LoginGuard {
  constructor(private readonly counters: WindowCounters) {}

  async admit(address: string, s: TSettings, account = ADMIN_ACCOUNT): Promise<LoginTicket> {
    const windowMs = s.loginWindowSeconds * 1000
    const budgets = [
      { key: `login:${address}`, limit: s.loginAttemptsPerIp, scope: 'address' as const },
      { key: `login:account:${account}`, limit: s.loginFailuresPerAccount, scope: 'account' as const },
      { key: 'login:all', limit: s.loginFailuresGlobal, scope: 'global' as const },
    ]
    const hits = await Promise.all(
      budgets.map(async (b) => ({ ...b, hit: await this.counters.hit(b.key, windowMs) })),
    )
    const ticket: LoginTicket = { hits: hits.map(({ key, hit }) => ({ key, hit })), slots: [], windowMs }
    const [address_, ...shared] = hits
    if (address_!.hit.count > address_!.limit) {
      await this.abandon(ticket)
      throw limitExceeded('too many failed logins from this address', address_!.hit.ttlMs, {
        reason: 'address',
        limit: address_!.limit,
      })
    }
    for (const b of shared) {
      const excess = b.hit.count - b.limit
      if (excess <= 0) continue
      const backoffMs = Math.min(2 ** Math.min(excess - 1, 30), s.loginBackoffMaxSeconds) * 1000
      const slot = `login:slot:${b.scope === 'account' ? `account:${account}` : 'all'}`
      const heldForMs = await this.counters.claim(slot, backoffMs)
      if (heldForMs !== null) {
        await this.abandon(ticket)
        throw limitExceeded(
          b.scope === 'account'
            ? 'too many failed logins for this account; logins are checked one at a time with a growing wait'
            : 'too many failed logins; logins are checked one at a time with a growing wait',
          heldForMs,
          { reason: b.scope, limit: b.limit },
        )
      }
      ticket.slots.push(slot)
    }
    return ticket
  }

  /** A right password: its failures are given back and the backoff ends. */
  async succeeded(ticket: LoginTicket): Promise<void> {
    await this.abandon(ticket)
  }

  /** A wrong password: the failures stay spent and the backoff slots run their time. */
  failed(_ticket: LoginTicket): void {}

  /** The password was not checked (an error): as if the attempt had not been made. */
  async abandon(ticket: LoginTicket): Promise<void> {
    await Promise.all([
      ...ticket.hits.map(({ key, hit }) => this.counters.undo(key, hit, ticket.windowMs)),
      ...ticket.slots.map((slot) => this.counters.release(slot)),
    ])
  }
}
