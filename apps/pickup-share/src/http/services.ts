import type { Logger } from '@quartet/core/log'
import type { AdminSessions } from '../domain/admin-sessions.ts'
import type { AuthCodes } from '../domain/auth-codes.ts'
import type { Cleanup } from '../domain/cleanup.ts'
import type { SettingsService } from '../domain/settings.ts'
import type { ShareService } from '../domain/shares.ts'
import type { StorageRegistry } from '../domain/storage.ts'
import type { StoreInstances } from '../domain/store-instances.ts'
import type { AuditRepository } from '../store/audit-repository.ts'

/** What the HTTP adapters call into. */
export interface Services {
  shares: ShareService
  cleanup: Cleanup
  authCodes: AuthCodes
  settings: SettingsService
  sessions: AdminSessions
  audit: AuditRepository
  storage: StorageRegistry
  /** Storage instances with quotas (admin /api/admin/stores). */
  instances: StoreInstances
  logger: Logger
  /** Origins accepted on state-changing admin requests; empty: the request's own origin. */
  adminAllowedOrigins: string[]
}

export const clientIp = (req: { ip?: string | undefined }): string => req.ip ?? 'unknown'
