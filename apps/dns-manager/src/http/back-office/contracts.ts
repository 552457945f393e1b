import { z } from 'zod'

/**
 * What the back office's JSON API (/account/api) takes and answers: the input schemas its
 * operations parse at the edge, and the output schema of each success answer, exactly the JSON
 * sent (`{ success: true, … }` over what the use cases in domain/people*.ts return).
 */

// --- input ---------------------------------------------------------------------------------------

const zEmail = z.email('must be an e-mail address').max(254)
const zPassword = z.string().min(1, 'must not be empty').max(1024)
const zToken = z.string().min(16, 'is not a link token').max(200)

export const ZSignup = z.strictObject({ email: zEmail, invite: zToken.optional() })
export const ZLinkToken = z.strictObject({ token: zToken })
export const ZCompleteWithPassword = z.strictObject({ token: zToken, password: zPassword })
export const ZSignin = z.strictObject({ email: zEmail, password: zPassword })
export const ZResetRequest = z.strictObject({ email: zEmail })
export const ZChangePassword = z.strictObject({ current_password: zPassword, new_password: zPassword })
export const ZAccountSettings = z.strictObject({
  api_access_enabled: z.boolean().optional(),
  ip_allow_list: z.array(z.string().max(64)).max(100).optional(),
})
export const ZAuditQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  before: z
    .string()
    .regex(/^\d{1,19}$/, 'must be an entry id')
    .optional(),
})
export const ZOperationName = z.strictObject({ name: z.string().max(64) })

// --- output --------------------------------------------------------------------------------------

const success = { success: z.literal(true) }
const zIso = z.iso.datetime()

/** GET /account/api/site: what the pages need before sign-in. */
export const ZSiteAnswer = z.strictObject({
  ...success,
  registration: z.enum(['open', 'invite', 'closed']),
  password_min: z.number().int(),
})

/** A mail was sent, or the answer is the same as if it had been (sign-up, reset). */
export const ZMailedAnswer = z.strictObject({ ...success, sent: z.literal(true) })

/** The address a sign-up link is for, and when the link ends. */
export const ZSignupLinkAnswer = z.strictObject({ ...success, email: z.string(), expires_at: zIso })

/** A session started (the qdm_session cookie is set): when it ends at the latest. */
export const ZSessionAnswer = z.strictObject({ ...success, expires_at: zIso })

export const ZResetAnswer = z.strictObject({ ...success, reset: z.literal(true) })

export const ZOkAnswer = z.strictObject(success)

/** The account as the pages show it (domain/people-account-settings.ts accountView). */
export const ZAccount = z.strictObject({
  id: z.string(),
  email: z.string(),
  balance_cents: z.number().int(),
  quota_total: z.number().int(),
  api_access_enabled: z.boolean(),
  ip_allow_list: z.array(z.string()),
  /** The caller's address as the service sees it. */
  your_ip: z.string().nullable(),
})

export const ZAccountAnswer = z.strictObject({ ...success, account: ZAccount })

/** One audit entry (domain/people-account-settings.ts auditLog). */
export const ZAuditEntry = z.strictObject({
  id: z.string(),
  at: zIso,
  operation: z.string(),
  target: z.string().nullable(),
  outcome: z.string(),
  via: z.enum(['api', 'web']),
  ip: z.string().nullable(),
  credential_id: z.string().nullable(),
})

export const ZAuditAnswer = z.strictObject({
  ...success,
  entries: z.array(ZAuditEntry),
  /** The `before` of the next page; null on the last one. */
  next_before: z.string().nullable(),
})
