import type { KeyValueStore } from '@quartet/core/kv'
import { ApiError } from '@quartet/core/errors'
import type { TSettings } from './settings.ts'

/**
 * Against guessing pickup codes: failed takes (and downloads naming an unknown code or path) are
 * counted per client IP and for everyone together, in kv so every replica sees the same counts.
 * Once a window's budget is spent, every take from that IP (right or wrong) gets 429.
 */
export class GuessGuard {
  constructor(private readonly kv: KeyValueStore) {}

  async check(ip: string, s: TSettings): Promise<void> {
    await this.refuseIfSpent(
      `guess:ip:${ip}`,
      s.takeFailuresPerIp,
      'too many failed pickup attempts from this address',
    )
    await this.refuseIfSpent(
      'guess:all',
      s.takeFailuresGlobal,
      'too many failed pickup attempts; try again later',
    )
  }

  async fail(ip: string, s: TSettings): Promise<void> {
    const ttl = s.takeFailureWindowSeconds * 1000
    await Promise.all([
      this.kv.incrWithTtl(`guess:ip:${ip}`, 1, ttl),
      this.kv.incrWithTtl('guess:all', 1, ttl),
    ])
  }

  private async refuseIfSpent(key: string, limit: number, message: string): Promise<void> {
    const used = Number((await this.kv.get(key)) ?? 0)
    if (used < limit) return
    const retryAfter = Math.max(1, Math.ceil(((await this.kv.ttlMs(key)) ?? 1000) / 1000))
    throw new ApiError(
      'rate_limit_exceeded',
      message,
      { limit },
      { headers: { 'Retry-After': String(retryAfter) } },
    )
  }
}
