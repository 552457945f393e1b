import { z } from 'zod'

/** The admin API's contract: what each admin operation (admin.ts) takes and answers. */

export const ZLogin = z.object({ password: z.string().min(1).max(1024) }).strict()
export const ZShareList = z
  .object({
    page: z.coerce.number().int().min(1).default(1),
    pageSize: z.coerce.number().int().min(1).max(200).default(50),
    sort: z.enum(['createdAt', 'expiresAt', 'code']).default('createdAt'),
    order: z.enum(['asc', 'desc']).default('desc'),
    q: z.string().max(255).optional(),
    status: z.enum(['active', 'exhausted', 'expired']).optional(),
  })
  .strict()
export const ZDeleteShare = z
  .object({ code: z.string().regex(/^\d{6,12}$/, 'must be 6 to 12 digits') })
  .strict()
export const ZShareAction = z.object({ action: z.literal('cleanup') }).strict()
export const ZCreateAuthCode = z
  .object({
    note: z.string().max(500).optional(),
    expiresInHours: z
      .number()
      .int()
      .min(1)
      .max(24 * 365),
    scope: z.enum(['downloads', 'size', 'both']),
  })
  .strict()
export const ZRevokeAuthCode = z.object({ id: z.uuid() }).strict()
export const ZAuditQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    action: z.string().max(100).optional(),
  })
  .strict()

export const ZLoginResponse = z.object({ ok: z.literal(true), expiresAt: z.string() })
export const ZOk = z.object({ ok: z.literal(true) })
export const ZAdminShare = z.object({
  code: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
  exhaustedAt: z.string().nullable(),
  maxDownloads: z.number().int().nullable(),
  remaining: z.number().int().nullable(),
  limitSize: z.boolean(),
  /** A password protects it (the admin never sees the password). */
  protected: z.boolean(),
  /** Encrypted end to end in the sender's browser (its file names are placeholders). */
  encrypted: z.boolean(),
  totalBytes: z.number().int(),
  files: z.array(
    z.object({
      name: z.string(),
      size: z.number().int(),
      type: z.string(),
      path: z.string(),
      store: z.string(),
    }),
  ),
})
export const ZAdminShareList = z.object({
  items: z.array(ZAdminShare),
  page: z.number().int(),
  pageSize: z.number().int(),
  total: z.number().int(),
})
export const ZShareDeleted = z.object({ deleted: z.literal(true), code: z.string() })
export const ZCleanupResult = z.object({
  removedFiles: z.number(),
  freedBytes: z.number(),
  partialFiles: z.number(),
  partialBytes: z.number(),
})
export const ZAuthCodeRecord = z.object({
  id: z.string(),
  hint: z.string(),
  note: z.string().nullable(),
  scope: z.enum(['downloads', 'size', 'both']),
  status: z.enum(['unused', 'used', 'expired', 'revoked']),
  createdAt: z.string(),
  expiresAt: z.string(),
  usedAt: z.string().nullable(),
  usedByShare: z.string().nullable(),
  revokedAt: z.string().nullable(),
})
export const ZAuthCodeList = z.object({ items: z.array(ZAuthCodeRecord) })
/** A new code: its record, and the code itself (shown in this answer only). */
export const ZIssuedAuthCode = ZAuthCodeRecord.extend({ code: z.string() })
export const ZAuditEntry = z.object({
  id: z.string(),
  at: z.string(),
  actor: z.string(),
  action: z.string(),
  target: z.string().nullable(),
  ip: z.string().nullable(),
  details: z.record(z.string(), z.unknown()).nullable().optional(),
})
export const ZAuditList = z.object({ items: z.array(ZAuditEntry) })
