import { baseConfigShape, type Env, loadConfig } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3003, schema: 'dns_manager', appName: 'dns-manager' }),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (DNS_MANAGER_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'DNS_MANAGER', env })
