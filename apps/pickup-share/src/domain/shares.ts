import { randomBytes, randomInt, randomUUID } from 'node:crypto'
import { hashToken as hashOf } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { AuthCodes } from './auth-codes.ts'
import type { DownloadGate } from './download-gate.ts'
import type { IssuedUploadsPort, ShareRecord, SharesPort } from './ports.ts'
import type { SettingsService } from './settings.ts'
import type { SharePasswords } from './share-passwords.ts'
import type { StorageDriver, StorageRegistry, StoreKind } from './storage.ts'
import type { StorageInstances } from './storage-instances.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { UploadTokens } from './upload-token.ts'

export interface ShareRequest {
  files: Array<{
    name: string
    size: number
    type: string
    pathname: string
    store: StoreKind
    /**
     * The proof its upload permission returned: only the uploader holds it. Without it (a client
     * that sends seed 002's five fields), the file is taken only from the address it was issued to.
     */
    proof?: string | undefined
  }>
  /** The client asking, as the limits count it: matched against an upload's when no proof comes. */
  clientKey: string
  expireDays?: number | undefined
  maxDownloads?: number | null | undefined
  limitSize?: boolean | undefined
  authCode?: string | undefined
  /** The receiver must know it (take and every download); kept as a scrypt hash only. */
  password?: string | undefined
}

export interface ShareCreationDeps {
  shares: Pick<SharesPort, 'create'>
  uploads: Pick<IssuedUploadsPort, 'issuedByPathname'>
  storage: Pick<StorageRegistry, 'defaultFor' | 'enabledKinds'>
  instances: Pick<StorageInstances, 'driver' | 'commit'>
  settings: SettingsService
  authCodes: AuthCodes
  gate: Pick<DownloadGate, 'seed'>
  passwords: Pick<SharePasswords, 'hash'>
  reservations: Pick<UploadReservations, 'shared'>
  tokens: Pick<UploadTokens, 'proves'>
  clock: Clock
  orphanAfterHours: number
}

const DAY_MS = 86_400_000

/** Creating a share from uploads this server issued: its pickup code and its link token. */
export class ShareCreation {
  constructor(private readonly d: ShareCreationDeps) {}

  private driverFor(kind: StoreKind): StorageDriver {
    const driver = this.d.storage.defaultFor(kind)
    if (!driver)
      throw new ApiError('store_unavailable', `the ${kind} store is not enabled on this server`, {
        enabled: this.d.storage.enabledKinds(),
      })
    return driver
  }
  /**
   * Creates a share: its pickup code (typed, guarded against guessing) and its link token (128
   * random bits for the pickup link, never limited; only its hash is kept, so it is shown once).
   */
  async createShare(req: ShareRequest): Promise<{ code: string; token: string; share: ShareRecord }> {
    const s = await this.d.settings.get()
    const now = this.d.clock.now()
    const expireDays = req.expireDays ?? s.defaultExpireDays
    if (expireDays > s.maxExpireDays)
      throw new ApiError('bad_request', `body.expireDays: must be at most ${s.maxExpireDays}`)
    const maxDownloads = req.maxDownloads === undefined ? s.defaultMaxDownloads : req.maxDownloads
    if (maxDownloads !== null && maxDownloads > s.maxDownloadsCap)
      throw new ApiError('bad_request', `body.maxDownloads: must be at most ${s.maxDownloadsCap}`)
    const needs: Array<'downloads' | 'size'> = []
    if (maxDownloads === null) needs.push('downloads')
    if (req.limitSize) needs.push('size')
    const authCode = needs.length ? await this.d.authCodes.requireUnlimited(s, req.authCode, needs) : null

    const seen = new Set<string>()
    const files = []
    for (const [i, { proof, ...f }] of req.files.entries()) {
      const issued = await this.d.uploads.issuedByPathname(f.store, f.pathname)
      const driver = issued ? await this.d.instances.driver(issued.storeInstance) : undefined
      // Only the uploader holds the proof; a client that sends none must be asking from the
      // address the upload was issued to. An unknown pathname, a wrong proof and another address
      // get the same answer (the proof is checked either way), so a stranger learns nothing.
      const proved =
        proof === undefined
          ? issued?.clientKey != null && issued.clientKey === req.clientKey
          : this.d.tokens.proves(issued?.storeInstance ?? '', f.pathname, proof)
      if (!issued || !driver || !proved) {
        if (!this.d.storage.defaultFor(f.store)) this.driverFor(f.store)
        throw new ApiError(
          'upload_not_issued',
          `body.files.${i}: not an upload this server issued to you (send the proof its /api/upload answer gave)`,
        )
      }
      const key = `${driver.instance}\n${f.pathname}`
      if (seen.has(key)) throw new ApiError('bad_request', `body.files.${i}.pathname: listed twice`)
      seen.add(key)
      if (issued.shareId)
        throw new ApiError('upload_already_shared', `body.files.${i}.pathname: already part of a share`)
      if (issued.createdAt.getTime() < now.getTime() - this.d.orphanAfterHours * 3_600_000)
        throw new ApiError('upload_expired', `body.files.${i}.pathname: the upload is too old to share`)
      const unlimitedSize = issued.maxBytes === null
      if (unlimitedSize && (!req.limitSize || authCode?.id !== issued.authCodeId))
        throw new ApiError(
          'auth_code_missing',
          `body.files.${i}: sharing an unlimited-size upload needs limitSize and its authorization code`,
        )
      const info = await driver.stat(f.pathname)
      if (!info) throw new ApiError('upload_missing', `body.files.${i}.pathname: nothing was uploaded there`)
      // The permission's declared size is what was reserved, so it is the one size a file may have.
      if (info.size > issued.size) {
        await driver.delete(f.pathname).catch(() => {})
        throw new ApiError(
          'file_too_large',
          `body.files.${i}: the uploaded file has ${info.size} bytes, more than the ${issued.size} its upload permission declared`,
        )
      }
      const limit = unlimitedSize ? null : Math.min(issued.maxBytes!, s.maxFileSizeBytes)
      if (limit !== null && info.size > limit) {
        await driver.delete(f.pathname).catch(() => {})
        throw new ApiError('file_too_large', `body.files.${i}: the uploaded file exceeds ${limit} bytes`)
      }
      if (info.size !== issued.size)
        throw new ApiError(
          'size_mismatch',
          `body.files.${i}: the upload permission declared ${issued.size} bytes, ${info.size} were uploaded`,
        )
      if (f.size !== issued.size)
        throw new ApiError(
          'size_mismatch',
          `body.files.${i}.size: declared ${f.size}, uploaded ${info.size} bytes`,
        )
      files.push({
        ...f,
        store: driver.kind,
        storeInstance: driver.instance,
        issuedUploadId: issued.id,
        clientKey: issued.clientKey,
        reserved: issued.size,
        real: info.size,
      })
    }

    const expiresAt = new Date(now.getTime() + expireDays * DAY_MS)
    const id = randomUUID()
    const token = linkToken()
    const passwordHash = req.password === undefined ? null : await this.d.passwords.hash(req.password)
    const result = await this.d.shares.create(
      {
        id,
        code: pickupCode(s.codeLength),
        linkTokenHash: hashOf(token),
        maxDownloads,
        limitSize: req.limitSize ?? false,
        passwordHash,
        createdAt: now,
        expiresAt,
        files,
        authCode: authCode && req.authCode ? { hash: hashOf(req.authCode), now } : null,
      },
      () => pickupCode(s.codeLength),
    )
    if (!result.ok) {
      if (result.reason === 'auth_code_unusable') return this.d.authCodes.explainByCode(req.authCode!)
      throw new ApiError('upload_already_shared', 'a file of this share is already part of another share')
    }
    // The reservations become used bytes of the real size.
    for (const f of files) {
      await this.d.instances.commit(f.storeInstance, f.reserved, f.real)
      await this.d.reservations.shared({
        store: f.store,
        storeInstance: f.storeInstance,
        size: f.reserved,
        clientKey: f.clientKey,
      })
    }
    if (maxDownloads !== null) await this.d.gate.seed(id, maxDownloads, expiresAt)
    return { code: result.share.code, token, share: result.share }
  }
}

/** The token of a pickup link: 128 bits from a CSPRNG, base64url (22 characters). */
export function linkToken(): string {
  return randomBytes(16).toString('base64url')
}

/** Digits from a CSPRNG (no modulo bias: randomInt rejects out-of-range draws). */
export function pickupCode(length: number): string {
  let code = ''
  for (let i = 0; i < length; i++) code += String(randomInt(10))
  return code
}
