import { randomUUID } from 'node:crypto'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import { generateToken, hashToken } from '@quartet/core/auth'
import type { AuthCodeRecord, AuthCodesPort } from './ports.ts'
import type { TSettings } from './settings.ts'

export type AuthScope = 'downloads' | 'size' | 'both'

export const authCodeStatus = (c: AuthCodeRecord, now: Date) =>
  c.revokedAt ? 'revoked' : c.usedAt ? 'used' : c.expiresAt <= now ? 'expired' : 'unused'

/** One-time authorization codes for unlimited mode. The code is shown once; only its hash is kept. */
export class AuthCodes {
  constructor(
    private readonly repo: AuthCodesPort,
    private readonly clock: Clock,
  ) {}

  async issue(input: { note?: string | undefined; expiresInHours: number; scope: AuthScope }) {
    const code = generateToken('psac_', 16)
    const record = await this.repo.create({
      id: randomUUID(),
      codeHash: hashToken(code),
      hint: code.slice(-4),
      note: input.note ?? null,
      scope: input.scope,
      expiresAt: new Date(this.clock.now().getTime() + input.expiresInHours * 3_600_000),
    })
    return { code, record }
  }

  /**
   * Whether `code` may grant `needs` right now, without using it up (that happens atomically
   * when the share is created). Throws 403 with the reason: missing, invalid, revoked, used,
   * expired, or a scope that does not cover the request.
   */
  async check(code: string | undefined, needs: Array<'downloads' | 'size'>): Promise<AuthCodeRecord> {
    if (!code)
      throw new ApiError('auth_code_missing', 'unlimited mode needs an authorization code (authCode)')
    const record = await this.repo.findByHash(hashToken(code))
    if (!record) throw new ApiError('auth_code_invalid', 'the authorization code is not valid')
    this.explain(record)
    for (const need of needs)
      if (record.scope !== 'both' && record.scope !== need)
        throw new ApiError('auth_code_scope', `the authorization code does not grant unlimited ${need}`)
    return record
  }

  /** `check`, once the settings allow unlimited mode at all (403 `unlimited_disabled` otherwise). */
  async requireUnlimited(
    s: TSettings,
    code: string | undefined,
    needs: Array<'downloads' | 'size'>,
  ): Promise<AuthCodeRecord> {
    if (!s.unlimitedEnabled)
      throw new ApiError('unlimited_disabled', 'unlimited mode is switched off on this server')
    return this.check(code, needs)
  }

  /** Throws the reason a known code cannot be used (again). */
  explain(record: AuthCodeRecord): void {
    const status = authCodeStatus(record, this.clock.now())
    if (status === 'revoked') throw new ApiError('auth_code_revoked', 'the authorization code was revoked')
    if (status === 'used') throw new ApiError('auth_code_used', 'the authorization code was already used')
    if (status === 'expired') throw new ApiError('auth_code_expired', 'the authorization code has expired')
  }

  async explainByCode(code: string): Promise<never> {
    const record = await this.repo.findByHash(hashToken(code))
    if (record) this.explain(record)
    throw new ApiError('auth_code_used', 'the authorization code was already used')
  }

  async list(limit = 500) {
    const now = this.clock.now()
    return (await this.repo.list(limit)).map((record) => ({ record, status: authCodeStatus(record, now) }))
  }

  async revoke(id: string): Promise<AuthCodeRecord> {
    const record = await this.repo.findById(id)
    if (!record) throw new ApiError('auth_code_not_found', `no authorization code ${id}`)
    if (!(await this.repo.revoke(id, this.clock.now())))
      throw new ApiError(
        'conflict',
        `the authorization code is already ${authCodeStatus(record, this.clock.now())}`,
      )
    return (await this.repo.findById(id))!
  }
}
