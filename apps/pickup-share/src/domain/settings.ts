import { ApiError } from '@quartet/core/errors'
import { z } from 'zod'
import type { SettingsPort } from './ports.ts'

const int = (min: number, max: number) => z.number().int().min(min).max(max)

/** Site settings, editable by the admin; every field has a default. */
export const ZSettings = z
  .object({
    defaultExpireDays: int(1, 3650).default(7),
    maxExpireDays: int(1, 3650).default(30),
    defaultMaxDownloads: int(1, 1_000_000).default(10),
    maxDownloadsCap: int(1, 1_000_000).default(100),
    maxFileSizeBytes: int(1, Number.MAX_SAFE_INTEGER).default(1_048_576_000),
    /** Digits of new pickup codes (README "Guessing" has the arithmetic behind 12). */
    codeLength: int(6, 12).default(12),
    unlimitedEnabled: z.boolean().default(false),
    /** Failed code checks (takes, downloads) allowed per client address (IPv6: its /64) per window. */
    takeFailuresPerIp: int(1, 1_000_000).default(10),
    /** Failed code checks of everyone together per window; past it, checks are throttled. */
    takeFailuresGlobal: int(1, 100_000_000).default(600),
    takeFailureWindowSeconds: int(1, 86_400).default(600),
    /** Code checks per minute for everyone together while the global budget is spent. */
    guessThrottlePerMinute: int(1, 100_000).default(30),
    /** Wrong share passwords allowed per client address (IPv6: its /64) per window, over all shares. */
    passwordFailuresPerIp: int(1, 1_000_000).default(10),
    /** Wrong passwords allowed per protected share per window, from everyone together. */
    passwordFailuresPerShare: int(1, 1_000_000).default(20),
    passwordFailureWindowSeconds: int(1, 86_400).default(900),
    /** Failed admin logins per client address (IPv6: its /64) per window. */
    loginAttemptsPerIp: int(1, 1000).default(5),
    loginWindowSeconds: int(1, 86_400).default(900),
    /** Failed logins of one account per window before its logins back off. */
    loginFailuresPerAccount: int(1, 100_000).default(20),
    /** Failed logins of all accounts together per window before every login backs off. */
    loginFailuresGlobal: int(1, 1_000_000).default(100),
    /** The longest wait between two checked logins while backing off. */
    loginBackoffMaxSeconds: int(1, 86_400).default(60),
    /** The pickup page shows text, images, audio, video and PDF before download (README "Previews"). */
    previewEnabled: z.boolean().default(true),
    /** Files larger than this are never previewed, only downloaded. */
    previewMaxBytes: int(1, Number.MAX_SAFE_INTEGER).default(20_971_520),
  })
  .strict()
  .superRefine((s, ctx) => {
    if (s.defaultExpireDays > s.maxExpireDays)
      ctx.addIssue({ code: 'custom', path: ['defaultExpireDays'], message: 'must not exceed maxExpireDays' })
    if (s.defaultMaxDownloads > s.maxDownloadsCap)
      ctx.addIssue({
        code: 'custom',
        path: ['defaultMaxDownloads'],
        message: 'must not exceed maxDownloadsCap',
      })
  })
export type TSettings = z.infer<typeof ZSettings>

/** A PUT may send any subset; the merged result is validated as a whole. */
export const ZSettingsPatch = z
  .object(
    Object.fromEntries(
      Object.entries(ZSettings.shape).map(([k, v]) => [
        k,
        ((v as z.ZodDefault).unwrap() as z.ZodType).optional(),
      ]),
    ),
  )
  .strict() as unknown as z.ZodType<Partial<TSettings>>

const KEY = 'site'

export class SettingsService {
  /** The last value read and what it parsed to: most reads find the same value again. */
  private last: { stored: string; settings: Readonly<TSettings> } | undefined

  constructor(private readonly repo: SettingsPort) {}

  /**
   * The settings as stored now (read on every call: another replica may have changed them), as
   * one frozen object for as long as the stored value stays the same.
   */
  async get(): Promise<TSettings> {
    const stored = (await this.repo.getText(KEY)) ?? '{}'
    if (this.last?.stored === stored) return this.last.settings
    const parsed = ZSettings.safeParse(JSON.parse(stored))
    // A stored value that no longer validates (older version) falls back to the defaults field by field.
    const settings = Object.freeze(parsed.success ? parsed.data : ZSettings.parse({}))
    this.last = { stored, settings }
    return settings
  }

  async update(patch: Partial<TSettings>): Promise<{ before: TSettings; after: TSettings }> {
    const before = await this.get()
    const merged = ZSettings.safeParse({ ...before, ...patch })
    if (!merged.success) {
      const issues = merged.error.issues.map((i) => ({
        field: `body.${i.path.join('.')}`,
        message: i.message,
      }))
      throw new ApiError('settings_invalid', `${issues[0]!.field}: ${issues[0]!.message}`, { issues })
    }
    await this.repo.put(KEY, merged.data)
    return { before, after: merged.data }
  }
}
