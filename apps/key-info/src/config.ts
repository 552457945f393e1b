import { baseConfigShape, type Env, loadConfig } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3002, schema: 'key_info', appName: 'key-info' }),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (KEY_INFO_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'KEY_INFO', env })
