import type { Clock } from '@quartet/core/clock'
import { hashToken as hashOf } from '@quartet/core/auth'
import type { GuessGuard } from './guess-guard.ts'
import type { ShareEnd, ShareRecord, SharesPort } from './ports.ts'
import type { SettingsService, TSettings } from './settings.ts'
import { endedError, endedOrNotFound, shareNotFound, unlockShare } from './share-access.ts'
import type { AccessGrant, SharePasswords, ShareUnlock } from './share-passwords.ts'

export interface Manifest {
  code: string
  files: Array<{ name: string; size: number; type: string; path: string }>
  createdAt: Date
  expiresAt: Date
}

/** What take answers: the manifest, and for a protected share the grant its downloads carry. */
export interface TakeAnswer {
  manifest: Manifest
  remaining: number | null
  access?: AccessGrant
}

export interface PickupDeps {
  shares: Pick<SharesPort, 'findLiveByCode' | 'findLiveByLinkToken' | 'endOf'>
  settings: SettingsService
  guard: GuessGuard
  passwords: SharePasswords
  clock: Clock
}

/** Taking a share: the receiver exchanges a pickup code (or link) for the file list. */
export class Pickup {
  constructor(private readonly d: PickupDeps) {}

  /**
   * A typed code, checked under the guessing limits (GuessGuard): the share, or 404 counted as a
   * failure of the address and of everyone.
   */
  private async checkCode(code: string, address: string, s: TSettings): Promise<ShareRecord> {
    const ticket = await this.d.guard.admit(address, s)
    const now = this.d.clock.now()
    let share: ShareRecord | null
    let end: ShareEnd | null = null
    try {
      share = await this.d.shares.findLiveByCode(code, now)
      if (!share || share.remaining === 0) end = await this.d.shares.endOf({ code }, now)
    } catch (err) {
      await this.d.guard.succeeded(ticket) // not looked at: no failure
      throw err
    }
    if (share && share.remaining !== 0) {
      await this.d.guard.succeeded(ticket)
      return share
    }
    // A code whose share is used up or expired is not a wrong guess: it spends nothing.
    if (end) {
      await this.d.guard.succeeded(ticket)
      throw endedError(end)
    }
    this.d.guard.failed(ticket)
    throw shareNotFound()
  }

  /**
   * A typed code: first checked as a code guess (a wrong code is 404 and spends the code budget;
   * a right one gives it back), only then, for a protected share, the password under its own
   * budgets (SharePasswords). So a password prompt can only follow a code check the guessing
   * limits let through, and a wrong password never spends the code budget.
   */
  async take(code: string, address: string, unlock: ShareUnlock = {}): Promise<TakeAnswer> {
    const s = await this.d.settings.get()
    const share = await this.checkCode(code, address, s)
    await unlockShare(this.d, share, unlock, address, s)
    return this.takeAnswerOf(share)
  }

  /**
   * The pickup link: its token is 128 random bits, so it is not guessable and never goes through
   * the guessing limits; a flood of wrong codes cannot keep its receiver out. A protected share
   * still needs its password (the link alone is not enough).
   */
  async takeByLink(token: string, address: string, unlock: ShareUnlock = {}): Promise<TakeAnswer> {
    const share = await this.shareOfLink(token)
    await unlockShare(this.d, share, unlock, address)
    return this.takeAnswerOf(share)
  }

  /** The answer of a take; a protected share's carries the access grant for its downloads. */
  private takeAnswerOf(share: ShareRecord): TakeAnswer {
    const answer: TakeAnswer = takeAnswer(share)
    if (share.passwordHash !== null) answer.access = this.d.passwords.grantFor(share)
    return answer
  }

  private async shareOfLink(token: string): Promise<ShareRecord> {
    const share = await this.d.shares.findLiveByLinkToken(hashOf(token), this.d.clock.now())
    if (!share || share.remaining === 0) throw await endedOrNotFound(this.d, { linkTokenHash: hashOf(token) })
    return share
  }
}

function takeAnswer(share: ShareRecord): { manifest: Manifest; remaining: number | null } {
  return {
    manifest: {
      code: share.code,
      files: share.files.map((f) => ({ name: f.name, size: f.size, type: f.type, path: f.pathname })),
      createdAt: share.createdAt,
      expiresAt: share.expiresAt,
    },
    remaining: share.remaining,
  }
}
