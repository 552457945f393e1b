import { createHmac, timingSafeEqual } from 'node:crypto'
import { hashPassword, verifyPassword } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { TSettings } from './settings.ts'
import { lookAgainForOtherReplicas } from './guess-guard.ts'
import { type CounterHit, limitExceeded, type WindowCounters } from './window-counters.ts'

/** The share a password protects, as far as the check needs it. */
export interface ProtectedShare {
  id: string
  passwordHash: string | null
  expiresAt: Date
}

/**
 * What a take or download brings to open a protected share: the password (JSON body of take,
 * or the `X-Share-Password` header) or the access grant a take with the right password returned
 * (the `access` query parameter of downloads). Neither is ever needed by a share without one.
 */
export interface ShareUnlock {
  password?: string | undefined
  access?: string | undefined
}

/** The access grant take returns for a protected share: downloads carry it instead of the password. */
export interface AccessGrant {
  grant: string
  expiresAt: Date
}

/** What the password checks report, for metrics (see http/metrics.ts). */
export interface PasswordObserver {
  /** A wrong password was compared (it spent both budgets). */
  failure?(): void
  /** A check refused with 429 before comparing: the address's or the share's budget is spent. */
  refused?(reason: 'password_address' | 'password_share'): void
}

/** How long a check waits for checks of its address or share in flight before it is refused. */
const IN_FLIGHT_WAIT_MS = 1500
const GRANT_VERSION = 'a1'

export interface SharePasswordsDeps {
  counters: WindowCounters
  clock: Clock
  /** UPLOAD_TOKEN_SECRET: grants are HMACs under a key derived from it (every replica checks them). */
  secret: string
  /** How long a grant lasts after take (DOWNLOAD_RESUME_WINDOW_SECONDS), never past the share's expiry. */
  grantTtlMs: number
  inFlightWaitMs?: number
}

/**
 * Password-protected shares (README "Password-protected shares"). The password is kept as core's
 * scrypt hash only. Wrong passwords spend two budgets, the client address's and the share's,
 * each counted like pickup-code guesses (WindowCounters: INCR-then-compare in one step in Redis,
 * one synchronous step in the process while Redis is away): every check spends one failure of
 * both *before* the slow hash is compared, and a right password gives both back. So parallel
 * guesses can never exceed a budget, across replicas too.
 *
 * A password is not a pickup code: these counters are separate from the guessing budget of codes
 * (GuessGuard), and the caller has already passed the code check (spending its code guess, given
 * back because the code was right) before it gets here.
 */
export class SharePasswords {
  private readonly grantKey: Buffer
  /** Checks admitted and not yet ended in this process, per counter key. */
  private readonly inFlight = new Map<string, number>()
  private readonly waiters = new Set<() => void>()
  private readonly observers = new Set<PasswordObserver>()

  constructor(private readonly d: SharePasswordsDeps) {
    this.grantKey = createHmac('sha256', d.secret).update('pickup-share share access grant').digest()
  }

  observe(observer: PasswordObserver): () => void {
    this.observers.add(observer)
    return () => this.observers.delete(observer)
  }

  private emit(call: (o: PasswordObserver) => void): void {
    for (const o of this.observers) {
      try {
        call(o)
      } catch {
        // a metric must never fail a request
      }
    }
  }

  /** The stored form of a new share's password: scrypt with a random salt (core's hashPassword). */
  hash(password: string): Promise<string> {
    return hashPassword(password)
  }

  /**
   * Lets a request open `share`, or throws: 401 `share_password_required` (nothing usable came,
   * or an access grant that expired), 403 `share_password_wrong`, 429 `rate_limit_exceeded` with
   * `details.reason` `password_address` or `password_share` once a budget is spent. A share
   * without a password opens as before, whatever came with the request.
   */
  async unlock(share: ProtectedShare, unlock: ShareUnlock, address: string, s: TSettings): Promise<void> {
    if (share.passwordHash === null) return
    if (unlock.access !== undefined && this.grantValid(share, unlock.access)) return
    if (unlock.password === undefined)
      throw new ApiError(
        'share_password_required',
        unlock.access !== undefined
          ? 'the access grant is not valid for this share or has expired; take the share again with its password'
          : 'this share is protected by a password: send it in the X-Share-Password header (or the password field of take)',
        { protected: true },
      )
    const ticket = await this.admit(share.id, address, s)
    let right: boolean
    try {
      right = await verifyPassword(unlock.password, share.passwordHash)
    } catch (err) {
      // Not compared: no failure.
      await this.giveBack(ticket).finally(() => this.ended(ticket))
      throw err
    }
    if (right) {
      // A right password spends nothing.
      await this.giveBack(ticket).finally(() => this.ended(ticket))
      return
    }
    this.ended(ticket)
    this.emit((o) => o.failure?.())
    throw new ApiError('share_password_wrong', 'the password is not right for this share', {
      protected: true,
    })
  }

  /** The grant take hands out once the password was right: downloads carry it as `access`. */
  grantFor(share: ProtectedShare): AccessGrant {
    const now = this.d.clock.now().getTime()
    const until = Math.min(now + this.d.grantTtlMs, share.expiresAt.getTime())
    const seconds = Math.floor(until / 1000)
    return {
      grant: `${GRANT_VERSION}.${seconds.toString(36)}.${this.mac(share, seconds)}`,
      expiresAt: new Date(seconds * 1000),
    }
  }

  private grantValid(share: ProtectedShare, grant: string): boolean {
    const [version, expires, mac] = grant.split('.')
    if (version !== GRANT_VERSION || !expires || !mac || !/^[0-9a-z]{1,12}$/.test(expires)) return false
    const seconds = parseInt(expires, 36)
    if (seconds * 1000 <= this.d.clock.now().getTime()) return false
    const expected = Buffer.from(this.mac(share, seconds))
    const given = Buffer.from(mac)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }

  /**
   * 128 bits of HMAC over the share, its password hash (a changed password voids old grants)
   * and the expiry: nothing is stored, every replica with the same secret checks it.
   */
  private mac(share: ProtectedShare, seconds: number): string {
    return createHmac('sha256', this.grantKey)
      .update(`${share.id}\n${share.passwordHash ?? ''}\n${seconds}`)
      .digest('base64url')
      .slice(0, 22)
  }

  private async admit(shareId: string, address: string, s: TSettings): Promise<PasswordTicket> {
    const windowMs = s.passwordFailureWindowSeconds * 1000
    const keys = { address: `pw:ip:${address}`, share: `pw:share:${shareId}` }
    // Real time, not the injectable clock: this is a wait, not a window.
    const giveUpAt = performance.now() + (this.d.inFlightWaitMs ?? IN_FLIGHT_WAIT_MS)
    const lookAgain = lookAgainForOtherReplicas(this.d.inFlightWaitMs ?? IN_FLIGHT_WAIT_MS)
    for (;;) {
      const [addressHit, shareHit] = await Promise.all([
        this.d.counters.hit(keys.address, windowMs),
        this.d.counters.hit(keys.share, windowMs),
      ])
      const ticket: PasswordTicket = { keys, addressHit, shareHit, windowMs }
      const over =
        addressHit.count > s.passwordFailuresPerIp
          ? { reason: 'password_address' as const, hit: addressHit, limit: s.passwordFailuresPerIp }
          : shareHit.count > s.passwordFailuresPerShare
            ? { reason: 'password_share' as const, hit: shareHit, limit: s.passwordFailuresPerShare }
            : null
      if (!over) {
        for (const key of [keys.address, keys.share])
          this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1)
        return ticket
      }
      // Refused before looking: no failure. Checks of the same address or share still in flight
      // here may be right passwords that give their failures back, so wait for them first (a
      // download manager's parallel connections, each with the header); otherwise 429.
      await this.giveBack(ticket)
      const waitMs = giveUpAt - performance.now()
      if ((this.inFlight.has(keys.address) || this.inFlight.has(keys.share)) && waitMs > 0) {
        await this.settled(waitMs)
        continue
      }
      // Checks in flight on another replica are not seen here: look again for a while, as a
      // code check does (guess-guard.ts).
      if (await lookAgain()) continue
      this.emit((o) => o.refused?.(over.reason))
      throw limitExceeded(
        over.reason === 'password_address'
          ? 'too many wrong share passwords from this address; try again later'
          : 'too many wrong passwords for this share; try again later',
        over.hit.ttlMs,
        { reason: over.reason, limit: over.limit },
      )
    }
  }

  private async giveBack(ticket: PasswordTicket): Promise<void> {
    await Promise.all([
      this.d.counters.undo(ticket.keys.address, ticket.addressHit, ticket.windowMs),
      this.d.counters.undo(ticket.keys.share, ticket.shareHit, ticket.windowMs),
    ])
  }

  private ended(ticket: PasswordTicket): void {
    for (const key of [ticket.keys.address, ticket.keys.share]) {
      const left = (this.inFlight.get(key) ?? 1) - 1
      if (left > 0) this.inFlight.set(key, left)
      else this.inFlight.delete(key)
    }
    for (const wake of [...this.waiters]) wake()
  }

  /** Resolves when any check in flight ends, or after `ms`. */
  private settled(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.waiters.delete(done)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.waiters.add(done)
    })
  }
}

interface PasswordTicket {
  keys: { address: string; share: string }
  addressHit: CounterHit
  shareHit: CounterHit
  windowMs: number
}
