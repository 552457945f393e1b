import type { Clock } from '@quartet/core/clock'
import { ApiError, DEPENDENCY_RETRY_AFTER_SECONDS } from '@quartet/core/errors'
import { generateToken, hashToken, safeEqual, verifyPassword } from '@quartet/core/auth'
import type { KeyValueStore } from '@quartet/core/kv'

export const IDLE_TIMEOUT_MS = 30 * 60_000
export const ABSOLUTE_TIMEOUT_MS = 12 * 3_600_000

interface SessionData {
  createdAt: number
  lastSeenAt: number
}

export interface AdminSession {
  /** A short, non-secret label of the session for the audit log. */
  label: string
  createdAt: Date
}

const sessionKey = (id: string) => `session:${hashToken(id)}`

/**
 * Admin login and sessions. The password is an scrypt hash (ADMIN_PASSWORD_HASH) or a plain value
 * (ADMIN_PASSWORD). Sessions live in kv under the SHA-256 of their id, so logout and expiry hold
 * on every replica: 30 minutes idle, 12 hours at most. Without kv there are no sessions: login,
 * logout and every admin request answer 503 service_unavailable with Retry-After, at once.
 */
export class AdminSessions {
  constructor(
    private readonly kv: KeyValueStore,
    private readonly clock: Clock,
    private readonly password: { hash?: string | undefined; plain?: string | undefined },
  ) {}

  /** A kv step of a session; a kv failure is the session store being unavailable (503). */
  private async sessionStore<T>(step: () => Promise<T>): Promise<T> {
    try {
      return await step()
    } catch (err) {
      throw new ApiError(
        'service_unavailable',
        'admin sessions are unavailable: the session store does not answer',
        undefined,
        { headers: { 'Retry-After': String(DEPENDENCY_RETRY_AFTER_SECONDS) }, cause: err },
      )
    }
  }

  /** 503 at once while the session store (kv) is unavailable: no login could start a session. */
  async assertAvailable(): Promise<void> {
    await this.sessionStore(() => this.kv.ping())
  }

  get enabled(): boolean {
    return Boolean(this.password.hash || this.password.plain)
  }

  async checkPassword(password: string): Promise<boolean> {
    if (this.password.hash) return verifyPassword(password, this.password.hash)
    if (this.password.plain) return safeEqual(password, this.password.plain)
    throw new ApiError('admin_disabled', 'no admin password is configured (ADMIN_PASSWORD_HASH)')
  }

  /** A new session; the old one (if any) is ended, so the id rotates at every login. */
  async start(previousId: string | undefined): Promise<{ id: string; session: AdminSession }> {
    if (previousId) await this.sessionStore(() => this.kv.del(sessionKey(previousId)))
    const id = generateToken('', 32)
    const now = this.clock.now().getTime()
    const data: SessionData = { createdAt: now, lastSeenAt: now }
    await this.sessionStore(() => this.kv.set(sessionKey(id), JSON.stringify(data), IDLE_TIMEOUT_MS))
    return { id, session: { label: hashToken(id).slice(0, 12), createdAt: new Date(now) } }
  }

  /** The live session for a cookie value, refreshing its idle timer; null when none. */
  async resume(id: string | undefined): Promise<AdminSession | null> {
    if (!id) return null
    const key = sessionKey(id)
    const raw = await this.sessionStore(() => this.kv.get(key))
    if (!raw) return null
    const data = JSON.parse(raw) as SessionData
    const now = this.clock.now().getTime()
    const absoluteLeft = data.createdAt + ABSOLUTE_TIMEOUT_MS - now
    if (now - data.lastSeenAt >= IDLE_TIMEOUT_MS || absoluteLeft <= 0) {
      await this.sessionStore(() => this.kv.del(key))
      return null
    }
    data.lastSeenAt = now
    await this.sessionStore(() =>
      this.kv.set(key, JSON.stringify(data), Math.min(IDLE_TIMEOUT_MS, absoluteLeft)),
    )
    return { label: hashToken(id).slice(0, 12), createdAt: new Date(data.createdAt) }
  }

  async end(id: string | undefined): Promise<void> {
    if (id) await this.sessionStore(() => this.kv.del(sessionKey(id)))
  }
}
