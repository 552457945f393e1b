import { baseConfigShape, type Env, loadConfig, zBool, zInt } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3001, schema: 'design_archive', appName: 'design-archive' }),
  /** Cache-Control of documents of the active release (`?version=` responses are immutable). */
  CACHE_CONTROL: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .refine((v) => !/[\r\n]/.test(v), 'must be one line')
    .default('public, max-age=300, stale-while-revalidate=86400'),
  /** How often each replica checks which release is active, in milliseconds. */
  RELEASE_POLL_MS: zInt(2000, 100, 3_600_000),
  /**
   * Send document hits through express with an access-log line each. Off by default: hits of
   * the active release are answered by a fast path (metrics and X-Request-Id kept, no log line),
   * as a static file server with access_log off would.
   */
  DOCUMENT_ACCESS_LOG: zBool(false),
  /** Publish the bundled content as the first release when the database has none. */
  SEED_ON_START: zBool(true),
  /** Version given to the seeded first release. */
  SEED_VERSION: z
    .string()
    .regex(/^[0-9A-Za-z][0-9A-Za-z._+-]{0,63}$/, 'must be a release version')
    .default('1.0.0'),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (DESIGN_ARCHIVE_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'DESIGN_ARCHIVE', env })
