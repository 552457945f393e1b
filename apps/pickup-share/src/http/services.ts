import type { Logger } from '@quartet/core/log'
import { type OperationContext, operationsOver } from '@quartet/core/operation'
import type { Request, Response } from 'express'
import { addressKey } from '@quartet/core/rate-limit'
import type { AdminSessions } from '../domain/admin-sessions.ts'
import type { AuthCodes } from '../domain/auth-codes.ts'
import type { GuessGuard } from '../domain/guess-guard.ts'
import type { SharePasswords } from '../domain/share-passwords.ts'
import type { LoginGuard } from '../domain/login-guard.ts'
import type { Cleanup } from '../domain/cleanup.ts'
import type { ConnectionTests } from '../domain/connection-tests.ts'
import type { SettingsService } from '../domain/settings.ts'
import type { Pickup } from '../domain/pickup.ts'
import type { ShareAdmin } from '../domain/share-admin.ts'
import type { ShareDownloads } from '../domain/share-downloads.ts'
import type { ShareCreation } from '../domain/shares.ts'
import type { UploadPermissions } from '../domain/upload-permissions.ts'
import type { StorageRegistry } from '../domain/storage.ts'
import type { StorageInstances } from '../domain/storage-instances.ts'
import type { AuditRepository } from '../store/audit-repository.ts'
import type { ClientTokenUploads } from '../domain/client-token-uploads.ts'
import type { ResumableUploads } from '../domain/resumable-uploads.ts'
import type { TusEndpoints } from '../drivers/tus-endpoints.ts'

/** What the HTTP adapters call into. */
export interface Services {
  /** Upload permissions, the uploads our server receives, the unlimited-mode check. */
  uploads: UploadPermissions
  /** Creating a share. */
  sharing: ShareCreation
  /** Taking a share by code or link. */
  pickup: Pickup
  /** Downloads of a share's files and of the whole share as an archive. */
  downloads: ShareDownloads
  /** The admin's list of shares, and deleting one. */
  shareAdmin: ShareAdmin
  cleanup: Cleanup
  authCodes: AuthCodes
  settings: SettingsService
  sessions: AdminSessions
  /** Failure budgets and backoff of admin logins. */
  loginGuard: LoginGuard
  audit: AuditRepository
  storage: StorageRegistry
  /** Storage instances with quotas (admin /api/admin/stores). */
  instances: StorageInstances
  /** The admin's connection test of an instance. */
  connectionTests: ConnectionTests
  logger: Logger
  /** Origins accepted on state-changing admin requests; empty: the request's own origin. */
  adminAllowedOrigins: string[]
  /** The guessing limiter (metrics observe it). */
  guard: GuessGuard
  /** Password checks of protected shares (metrics observe them). */
  passwords: SharePasswords
  /** Leading bits that name one IPv6 client in limits (RATE_LIMIT_IPV6_PREFIX). */
  ipv6Prefix: number
  /** Resumable (tus) uploads: the rules, and the tus servers of the instances. */
  resumable: ResumableUploads
  tus: TusEndpoints
  /** Uploads from the Vercel Blob client (client tokens). */
  clientTokens: ClientTokenUploads
}

/** The client's address as express resolved it with `trust proxy`: logged and audited as it is. */
export const clientIp = (req: { ip?: string | undefined }): string => req.ip ?? 'unknown'

/** The client as every per-address limit counts it: an IPv4 address, or an IPv6 one by its /64. */
export const clientKey = (req: { ip?: string | undefined }, s: Pick<Services, 'ipv6Prefix'>): string =>
  addressKey(req.ip, s.ipv6Prefix)

/** pickup-share's operations, each over the use cases (http/operations.ts lists them). */
export const { define, defineRepresentation } = operationsOver<Services>()

/**
 * The express request and response behind an operation's context: the operations here are
 * served by express only (none is hot), and some read what express resolved (the client's
 * address with `trust proxy`, the protocol and host of a link) or set a cookie.
 */
export function expressOf(ctx: Pick<OperationContext<unknown, unknown>, 'req' | 'headers'>): {
  req: Request
  res: Response
} {
  return { req: ctx.req as Request, res: ctx.headers as Response }
}
