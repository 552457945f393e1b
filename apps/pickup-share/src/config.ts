import { baseConfigShape, type Env, loadConfig } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3004, schema: 'pickup_share', appName: 'pickup-share' }),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (PICKUP_SHARE_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'PICKUP_SHARE', env })
