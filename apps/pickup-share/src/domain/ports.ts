/**
 * Ports the domain owns and adapters implement (docs/ARCHITECTURE.md): the records the use cases
 * work with and the interfaces they need from the database, grouped by the operations that need
 * them. src/store implements them over Prisma; app.ts hands each use case the ones it needs. The
 * storage driver port (what the blob, bucket and repo drivers do with the bytes) is in storage.ts.
 */

// ── Shares: creating one, taking it, downloading it, the admin's list and deletion ─────────────

export interface ShareFileRecord {
  name: string
  size: number
  type: string
  pathname: string
  store: string
  storeInstance: string
}

export interface ShareRecord {
  id: string
  code: string
  maxDownloads: number | null
  remaining: number | null
  limitSize: boolean
  /** scrypt hash of the share's password (never leaves the domain); null: not protected. */
  passwordHash: string | null
  createdAt: Date
  expiresAt: Date
  exhaustedAt: Date | null
  files: ShareFileRecord[]
}

export interface NewShare {
  id: string
  code: string
  /** SHA-256 of the pickup link's token. */
  linkTokenHash: string
  maxDownloads: number | null
  limitSize: boolean
  /** scrypt hash of the password the sender set, or null. */
  passwordHash: string | null
  createdAt: Date
  expiresAt: Date
  files: Array<ShareFileRecord & { issuedUploadId: string }>
  /** Consumed in the same transaction: the share exists only if the code was still usable. */
  authCode: { hash: string; now: Date } | null
}

export type CreateShareResult =
  { ok: true; share: ShareRecord } | { ok: false; reason: 'auth_code_unusable' | 'upload_already_shared' }

export interface ShareListQuery {
  page: number
  pageSize: number
  sort: 'createdAt' | 'expiresAt' | 'code'
  order: 'asc' | 'desc'
  q?: string | undefined
  status?: 'active' | 'exhausted' | 'expired' | undefined
  now: Date
}

/** Why a code or link opens nothing any more (its share used up or expired). */
export interface ShareEnd {
  reason: 'used_up' | 'expired'
  expiresAt: Date
}

/** What a share lookup names it by: the typed code, or the pickup link's token hash. */
export type ShareLookup = { code: string } | { linkTokenHash: string }

/** Shares and their files (store/share-repository.ts). */
export interface SharesPort {
  /**
   * Claims the issued uploads, consumes the authorization code and inserts the share, each step
   * atomic; `nextCode` draws another pickup code when the first is taken.
   */
  create(s: NewShare, nextCode: () => string): Promise<CreateShareResult>
  /** A share that can still be taken: not expired, not exhausted. */
  findLiveByCode(code: string, now: Date): Promise<ShareRecord | null>
  findLiveByLinkToken(tokenHash: string, now: Date): Promise<ShareRecord | null>
  /** A share a download may name: not expired, possibly exhausted. */
  findDownloadableByCode(code: string, now: Date): Promise<ShareRecord | null>
  findDownloadableByLinkToken(tokenHash: string, now: Date): Promise<ShareRecord | null>
  findByCode(code: string): Promise<ShareRecord | null>
  findById(id: string): Promise<ShareRecord | null>
  /** Why a code or link opens nothing any more; null when no share had it. */
  endOf(by: ShareLookup, now: Date): Promise<ShareEnd | null>
  /**
   * Deletes the share and its permissions; with `ended`, a used-up or expired share is remembered
   * until `ended.forgetAt`. The share, or null for every caller but the one that deleted it.
   */
  delete(id: string, ended?: { now: Date; forgetAt: Date }): Promise<ShareRecord | null>
  list(query: ShareListQuery): Promise<{ items: Array<ShareRecord & { totalBytes: number }>; total: number }>
  /** Forgets ended shares past their time; returns how many. */
  forgetEnded(now: Date): Promise<number>
  /** Shares to sweep: expired, or exhausted before `exhaustedBefore` with nothing to resume. */
  findEnded(now: Date, exhaustedBefore: Date, limit?: number): Promise<string[]>
  sharedPathnames(storeInstance: string): Promise<Set<string>>
}

// ── Downloads: the count of a share's downloads and the transfers that spend it ───────────────

/** The transfer opening a spent download pays for. */
export interface TransferPayment {
  transferId: string
}

/** A share's durable download count (the download gate's second half; store/share-repository.ts). */
export interface DownloadCountPort {
  findById(id: string): Promise<ShareRecord | null>
  /** Durable downloads left of a live counted share; null when it is gone, expired or exhausted. */
  remainingOf(id: string, now: Date): Promise<number | null>
  /** Spends one download (and with `pay` marks the transfer paid, atomically); what is left, or null. */
  decrementRemaining(id: string, now: Date, pay?: TransferPayment): Promise<number | null>
  refund(id: string): Promise<void>
}

export interface TransferKey {
  shareId: string
  path: string
  receiver: string
}

/** Counted downloads that may come in several requests (store/transfer-repository.ts). */
export interface TransfersPort {
  join(key: TransferKey, bytes: number, lease: number, now: Date): Promise<string | null>
  reserveIn(id: string, bytes: number, lease: number, now: Date): Promise<boolean>
  lease(id: string, want: number): Promise<number>
  beginOpening(
    id: string,
    key: TransferKey,
    budget: number,
    now: Date,
    expiresAt: Date,
    staleBefore: Date,
  ): Promise<'opened' | 'busy' | 'gone'>
  delete(id: string): Promise<void>
  deleteUntouched(id: string, leased: number): Promise<boolean>
  deleteUnpaid(id: string): Promise<void>
  finish(id: string, leased: number, written: number): Promise<void>
  hasLive(key: TransferKey, now: Date, staleBefore: Date): Promise<boolean>
  liveOfShare(shareId: string, now: Date): Promise<number>
}

// ── Uploads: permissions, their reservations, resumable and client-token uploads, clean-up ────

export interface IssuedUploadRecord {
  id: string
  store: string
  storeInstance: string
  pathname: string
  name: string
  size: number
  type: string
  maxBytes: number | null
  authCodeId: string | null
  /** The client as limits count it; null for permissions from before limits existed. */
  clientKey: string | null
  createdAt: Date
  uploadStartedAt: Date | null
  /** tus uploads: until when it may be resumed (null: not a tus upload). */
  resumableUntil: Date | null
  shareId: string | null
}

export type NewIssuedUpload = Omit<IssuedUploadRecord, 'shareId' | 'uploadStartedAt' | 'resumableUntil'> & {
  clientIp: string | null
}

/** The upload permissions this server issued (store/issued-upload-repository.ts). */
export interface IssuedUploadsPort {
  recordIssuedUpload(u: NewIssuedUpload): Promise<void>
  issuedUploads(keys: Array<{ storeInstance: string; pathname: string }>): Promise<IssuedUploadRecord[]>
  /** The permission behind a pathname of one storage kind (pathnames are random and unique). */
  issuedByPathname(store: string, pathname: string): Promise<IssuedUploadRecord | null>
  /** Unshared permissions younger than `cutoff`: their objects may still be shared. */
  pendingPathnames(storeInstance: string, cutoff: Date): Promise<Set<string>>
  /** Unshared permissions older than `cutoff` (orphans). */
  staleIssuedUploads(cutoff: Date, limit?: number): Promise<IssuedUploadRecord[]>
  /** Unshared permissions issued before `cutoff` whose body never began to arrive. */
  unusedIssuedUploads(
    cutoff: Date,
    filter?: { clientKey?: string; storeInstance?: string },
    limit?: number,
  ): Promise<IssuedUploadRecord[]>
  oldestUnusedIssued(clientKey: string | null): Promise<{ createdAt: Date; store: string } | null>
  /** true for the one caller that deleted the still unshared (with `unstarted`: unused) permission. */
  deleteIssuedUploadIfUnshared(id: string, options?: { unstarted?: boolean }): Promise<boolean>
  markUploadStarted(storeInstance: string, pathname: string, at: Date): Promise<boolean>
  clearUploadStarted(storeInstance: string, pathname: string, at: Date): Promise<void>
  markResumableStarted(storeInstance: string, pathname: string, at: Date, until: Date): Promise<boolean>
  clearResumableStart(storeInstance: string, pathname: string): Promise<void>
  expiredResumableUploads(now: Date, limit?: number): Promise<IssuedUploadRecord[]>
  clearResumable(id: string): Promise<void>
  shrinkIssuedUpload(id: string, from: number, to: number): Promise<boolean>
}

/** The key of everyone's allowance row. */
export const EVERYONE = '*'

/** The key of what one client holds on one kind of store (issue 48 item 3: its part of that store). */
export const onStore = (kind: string, clientKey: string) => `${kind}@${clientKey}`

/** Bytes held by unshared permissions, per client and for everyone (store/allowance-repository.ts). */
export interface AllowancesPort {
  /** Adds `bytes` to `key` within `limit` (and `share`, unless `key` holds nothing): atomic. */
  reserve(key: string, bytes: number, limit: number, share?: number): Promise<boolean>
  /** Gives `bytes` back (never below zero). */
  release(key: string, bytes: number): Promise<void>
  /** Brings rows unchanged for `quietMs` in line with the permissions; the rows corrected. */
  repair(quietMs: number, now: Date): Promise<number>
}

/** The tus side of a storage instance, as the domain needs it (drivers/tus-endpoints.ts implements it). */
export interface ResumableDataPort {
  /**
   * Under the upload's lock: 'finished' when the file is in the store (left alone), else its
   * partial data is removed (nothing there is not an error) and 'removed'.
   */
  expireIfUnfinished(instance: string, pathname: string): Promise<'finished' | 'removed'>
}

// ── Storage instances: the admin's list, quotas and byte accounting ───────────────────────────

export interface InstanceRecord {
  id: string
  kind: string
  name: string
  settings: Record<string, unknown>
  quotaBytes: number | null
  usedBytes: number
  reservedBytes: number
  enabled: boolean
  builtin: boolean
  createdAt: Date
  updatedAt: Date
}

export interface NewInstance {
  id: string
  kind: string
  name: string
  settings: Record<string, unknown>
  quotaBytes: number | null
  enabled: boolean
}

export interface InstancePatch {
  settings?: Record<string, unknown>
  enabled?: boolean
  quotaBytes?: number | null
}

/** Storage instances and their byte accounting (store/instance-repository.ts). */
export interface InstancesPort {
  list(): Promise<InstanceRecord[]>
  find(id: string): Promise<InstanceRecord | null>
  findByName(name: string): Promise<InstanceRecord | null>
  /** Inserts a built-in (environment-defined) instance unless it is there already. */
  ensureBuiltin(i: { id: string; kind: string; name: string }): Promise<void>
  /** false when the name is taken. */
  create(i: NewInstance): Promise<boolean>
  update(id: string, patch: InstancePatch): Promise<InstanceRecord | null>
  delete(id: string): Promise<boolean>
  /** Reserves `bytes` on an enabled instance with room: atomic. */
  reserve(id: string, bytes: number): Promise<boolean>
  release(id: string, bytes: number): Promise<void>
  commit(id: string, reserved: number, real: number): Promise<void>
  free(id: string, bytes: number): Promise<void>
  shareIdsUsing(id: string): Promise<string[]>
  deletePendingUploads(id: string): Promise<Array<{ clientKey: string | null; size: number; store: string }>>
}

// ── Admin: authorization codes and site settings ──────────────────────────────────────────────

export interface AuthCodeRecord {
  id: string
  hint: string
  note: string | null
  scope: 'downloads' | 'size' | 'both'
  createdAt: Date
  expiresAt: Date
  usedAt: Date | null
  usedByShareId: string | null
  usedByShareCode: string | null
  revokedAt: Date | null
}

export interface NewAuthCode {
  id: string
  codeHash: string
  hint: string
  note: string | null
  scope: string
  expiresAt: Date
}

/** Authorization codes for unlimited mode (store/auth-code-repository.ts). */
export interface AuthCodesPort {
  create(c: NewAuthCode): Promise<AuthCodeRecord>
  findByHash(codeHash: string): Promise<AuthCodeRecord | null>
  findById(id: string): Promise<AuthCodeRecord | null>
  list(limit: number): Promise<AuthCodeRecord[]>
  /** Revokes an unused code; false when it was already used or revoked. */
  revoke(id: string, now: Date): Promise<boolean>
}

/** Named JSON settings (store/settings-repository.ts). */
export interface SettingsPort {
  /** The stored JSON as text, null when there is none. */
  getText(key: string): Promise<string | null>
  put(key: string, value: Record<string, unknown>): Promise<void>
}
