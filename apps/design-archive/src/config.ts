import { baseConfigShape, type Env, loadConfig } from '@quartet/core/config'
import { z } from 'zod'

export const ZConfig = z.object({
  ...baseConfigShape({ port: 3001, schema: 'design_archive', appName: 'design-archive' }),
})
export type TConfig = z.infer<typeof ZConfig>

/** Every variable may also carry the app prefix (DESIGN_ARCHIVE_PORT wins over PORT). */
export const loadAppConfig = (env?: Env): TConfig => loadConfig(ZConfig, { prefix: 'DESIGN_ARCHIVE', env })
