import { createHash, randomBytes, randomInt, randomUUID } from 'node:crypto'
import type { Readable } from 'node:stream'
import { hashToken as hashOf } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError, toApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { ShareListQuery, ShareRecord, ShareRepository } from '../store/share-repository.ts'
import type { AuthCodes } from './auth-codes.ts'
import type { DownloadGate } from './download-gate.ts'
import { type Admission, type DownloadTransfers, ifRangeAllows, parseRange, strongEtag } from './downloads.ts'
import { choosePathname, type PreviewKind, previewOf } from './filenames.ts'
import type { GuessGuard } from './guess-guard.ts'
import { RESUMABLE_KINDS } from './resumable-uploads.ts'
import { ARCHIVE_TRANSFER_PATH, sliceOf, zipOfFiles } from './share-zip.ts'
import type { SettingsService, TSettings } from './settings.ts'
import type { AccessGrant, SharePasswords, ShareUnlock } from './share-passwords.ts'
import { checkEceHeader, type ShareEncryption } from './share-encryption.ts'
import type { ByteRange, StorageDriver, StorageRegistry, StoreKind, UploadPermission } from './storage.ts'
import type { StoreInstances } from './store-instances.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { UploadClaims, UploadTokens } from './upload-token.ts'

export interface ShareServiceDeps {
  shares: ShareRepository
  storage: StorageRegistry
  instances: StoreInstances
  settings: SettingsService
  authCodes: AuthCodes
  gate: DownloadGate
  transfers: DownloadTransfers
  guard: GuessGuard
  passwords: SharePasswords
  reservations: UploadReservations
  tokens: UploadTokens
  clock: Clock
  logger: Logger
  uploadTtlSeconds: number
  orphanAfterHours: number
}

export interface UploadRequest {
  store: StoreKind
  name: string
  size: number
  type: string
  limitSize?: boolean | undefined
  authCode?: string | undefined
  clientIp: string | null
  /** The client as limits count it (addressKey). */
  clientKey: string
}

export interface UploadGrant {
  store: StoreKind
  pathname: string
  upload: UploadPermission
  options: { allowOverwrite: false; maximumSizeInBytes: number | null }
  expiresAt: Date
  /** blob and bucket: the same permission for a resumable (tus) upload to this instance. */
  resumable?: { instance: string; token: string }
  /** The uploader's proof: /api/share takes the file only with it (UploadTokens.proofOf). */
  proof: string
}

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
  /** Encrypted in the sender's browser: what a receiver needs beside the key (never the key). */
  encryption?: ShareEncryption | undefined
}

export interface Manifest {
  code: string
  files: Array<{ name: string; size: number; type: string; path: string }>
  createdAt: Date
  expiresAt: Date
}

/** What a download request brings beside its code or token and path. */
export interface DownloadRequest {
  /** The `Range` header. */
  range?: string | undefined
  /** The `If-Range` header. */
  ifRange?: string | undefined
  /** A HEAD: the same answer without the body, counting nothing. */
  head?: boolean
  /**
   * A preview (GET /api/preview): only a type on the preview list, below the admin's size, while
   * previews are on; counted as this receiver's download of the file (README "Previews").
   */
  preview?: boolean
  /** The password or access grant of a protected share (ignored by a share without one). */
  unlock?: ShareUnlock
}

/** What take answers: the manifest, and for a protected share the grant its downloads carry. */
export interface TakeAnswer {
  manifest: Manifest
  remaining: number | null
  access?: AccessGrant
  encryption?: ShareEncryption
}

export interface OpenDownload {
  name: string
  type: string
  /** The whole file's size. */
  size: number
  /** Strong ETag of the file's bytes. */
  etag: string
  /** The range sent (206), or null for the whole file (200). */
  range: ByteRange | null
  /** null for a HEAD. */
  stream: Readable | null
  /**
   * Call before each chunk of the body goes out: undefined or a promise that resolves when it may
   * go, rejecting when the download's byte budget is spent (then cut the response there).
   */
  take(bytes: number): Promise<void> | undefined
  /** Call once when the response has ended (completed or aborted), with the body bytes sent. */
  done(written: number): Promise<void>
  /** For a preview: how it is shown and the type it is served as. */
  preview?: { kind: PreviewKind; contentType: string }
}

const DAY_MS = 86_400_000

/** The public flow: upload permission → share → take → counted download. */
export class ShareService {
  constructor(private readonly d: ShareServiceDeps) {}

  private driverFor(kind: StoreKind): StorageDriver {
    const driver = this.d.storage.defaultFor(kind)
    if (!driver)
      throw new ApiError('store_unavailable', `the ${kind} store is not enabled on this server`, {
        enabled: this.d.storage.enabledKinds(),
      })
    return driver
  }

  private async requireUnlimited(s: TSettings, code: string | undefined, needs: Array<'downloads' | 'size'>) {
    if (!s.unlimitedEnabled)
      throw new ApiError('unlimited_disabled', 'unlimited mode is switched off on this server')
    return this.d.authCodes.check(code, needs)
  }

  /**
   * The send page's check before the first byte: whether `code` grants what the share will ask
   * (unlimited downloads and/or no size limit) now. Consumes nothing; the share still decides.
   */
  async checkUnlimited(code: string | undefined, needs: Array<'downloads' | 'size'>) {
    const record = await this.requireUnlimited(await this.d.settings.get(), code, needs)
    return { scope: record.scope, expiresAt: record.expiresAt }
  }

  async requestUpload(req: UploadRequest): Promise<UploadGrant> {
    const s = await this.d.settings.get()
    let maxBytes: number | null = s.maxFileSizeBytes
    let authCodeId: string | null = null
    if (req.limitSize) {
      authCodeId = (await this.requireUnlimited(s, req.authCode, ['size'])).id
      maxBytes = null
    } else if (req.size > s.maxFileSizeBytes) {
      throw new ApiError('file_too_large', `files may be at most ${s.maxFileSizeBytes} bytes`, {
        maximumSizeInBytes: s.maxFileSizeBytes,
      })
    }
    // The permission limits, then an enabled instance with room: the declared size is reserved
    // there and in the client's and everyone's allowance (each atomic).
    const driver = await this.d.reservations.reserve(req.store, req.size, req.clientKey)
    const abandon = () => this.d.reservations.abandon(driver, req.size, req.clientKey)
    const cap = driver.maxObjectBytes
    if (cap !== undefined) {
      if (req.size > cap) {
        await abandon()
        throw new ApiError('file_too_large', `the ${driver.kind} store takes files of at most ${cap} bytes`, {
          maximumSizeInBytes: cap,
        })
      }
      maxBytes = maxBytes === null ? cap : Math.min(maxBytes, cap)
    }
    const pathname = choosePathname(req.name)
    const grantedAt = this.d.clock.now()
    const expiresAt = new Date(grantedAt.getTime() + this.d.uploadTtlSeconds * 1000)
    // A client-direct upload (a presigned bucket URL) must begin before its unused reservation may
    // be released; this server sees the others begin and refuses them once it was.
    const beginBy = this.d.reservations.beginBy(grantedAt)
    const direct = driver.kind === 'bucket' && beginBy < expiresAt
    let upload: UploadPermission
    try {
      upload = await driver.issueUpload({
        pathname,
        type: req.type,
        size: req.size,
        maxBytes,
        expiresAt: direct ? beginBy : expiresAt,
        allowOverwrite: false,
      })
    } catch (err) {
      await abandon()
      throw err
    }
    // The permission row carries the reservation from here on (UploadReservations releases it).
    try {
      await this.d.shares.recordIssuedUpload({
        id: randomUUID(),
        store: driver.kind,
        storeInstance: driver.instance,
        pathname,
        name: req.name,
        size: req.size,
        type: req.type,
        maxBytes,
        authCodeId,
        clientIp: req.clientIp,
        clientKey: req.clientKey,
        createdAt: grantedAt,
      })
    } catch (err) {
      await abandon()
      throw err
    }
    const resumable = (RESUMABLE_KINDS as readonly string[]).includes(driver.kind)
      ? {
          instance: driver.instance,
          token: this.d.tokens.sign({
            instance: driver.instance,
            pathname,
            size: req.size,
            maxBytes,
            expiresAt,
            allowOverwrite: false,
          }),
        }
      : undefined
    return {
      store: driver.kind,
      pathname,
      upload,
      options: { allowOverwrite: false, maximumSizeInBytes: maxBytes },
      expiresAt,
      ...(resumable ? { resumable } : {}),
      proof: this.d.tokens.proofOf(driver.instance, pathname),
    }
  }

  /**
   * PUT /api/blob/upload and /api/repo/upload (stores our own server writes to): the token names
   * the pathname, the instance and the declared size. A body of any other length is refused: a
   * declared Content-Length before anything is read, a streamed one at the first byte too many
   * (or when it ends short), and nothing is kept.
   */
  async receiveBlobUpload(
    token: string | undefined,
    /**
     * Called once the upload is accepted: the body to read. Nothing of it is read before (an HTTP
     * client waiting for `100 Continue` gets it then).
     */
    acceptBody: () => Readable,
    declaredLength: number | null,
    options: { kind?: 'blob' | 'repo' } = {},
  ) {
    const { claims, driver } = await this.checkBlobUpload(token, declaredLength, options.kind ?? 'blob')
    // From here the permission is in use: its reservation is not given back at expiry.
    const started = this.d.clock.now()
    if (!(await this.d.shares.markUploadStarted(claims.instance, claims.pathname, started)))
      throw new ApiError(
        'upload_token_expired',
        'the upload permission is no longer valid; ask for a new one',
      )
    try {
      const { size } = await driver.put(claims.pathname, acceptBody(), {
        size: claims.size,
        maxBytes: claims.maxBytes,
        allowOverwrite: claims.allowOverwrite,
      })
      return { pathname: claims.pathname, size }
    } catch (err) {
      if (err instanceof ApiError && err.code === 'insufficient_storage') {
        // The store is full: the permission ends and its reservation is released now.
        await this.d.reservations
          .storeHadNoRoom(claims.instance, claims.pathname)
          .catch((e: unknown) => this.d.logger.warn({ err: e }, 'releasing a failed upload failed'))
        throw err
      }
      // Nothing was stored (or it belongs to an earlier upload): unused again, unless stored.
      await this.d.shares.clearUploadStarted(claims.instance, claims.pathname, started).catch(() => {})
      throw err
    }
  }

  /**
   * What can be decided from the request's headers alone (token, instance, declared length), so
   * that an upload that would be refused is refused before its body is asked for (`100 Continue`).
   */
  async checkBlobUpload(token: string | undefined, declaredLength: number | null, kind: 'blob' | 'repo') {
    const claims = this.d.tokens.verify(token)
    const driver = await this.d.instances.driver(claims.instance)
    if (!driver || driver.kind !== kind)
      throw new ApiError('upload_token_invalid', 'the upload token is not valid')
    if (declaredLength !== null) checkDeclaredLength(claims, declaredLength)
    return { claims, driver }
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
    const authCode = needs.length ? await this.requireUnlimited(s, req.authCode, needs) : null

    const seen = new Set<string>()
    const files = []
    for (const [i, { proof, ...f }] of req.files.entries()) {
      const issued = await this.d.shares.issuedByPathname(f.store, f.pathname)
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
      if (req.encryption) await checkEceHeader(driver, f.pathname, req.encryption.recordSize, i)
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
        encryption: req.encryption ?? null,
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

  /**
   * A typed code, checked under the guessing limits (GuessGuard): the share, or 404 counted as a
   * failure of the address and of everyone.
   */
  private async checkCode(code: string, address: string, s: TSettings): Promise<ShareRecord> {
    const ticket = await this.d.guard.admit(address, s)
    const now = this.d.clock.now()
    let share: ShareRecord | null
    let end: ShareEnd | null = null
    try {
      share = await this.d.shares.findLiveByCode(code, now)
      if (!share || share.remaining === 0) end = await this.d.shares.endOf({ code }, now)
    } catch (err) {
      await this.d.guard.succeeded(ticket) // not looked at: no failure
      throw err
    }
    if (share && share.remaining !== 0) {
      await this.d.guard.succeeded(ticket)
      return share
    }
    // A code whose share is used up or expired is not a wrong guess: it spends nothing.
    if (end) {
      await this.d.guard.succeeded(ticket)
      throw endedError(end)
    }
    this.d.guard.failed(ticket)
    throw shareNotFound()
  }

  /**
   * A typed code: first checked as a code guess (a wrong code is 404 and spends the code budget;
   * a right one gives it back), only then, for a protected share, the password under its own
   * budgets (SharePasswords). So a password prompt can only follow a code check the guessing
   * limits let through, and a wrong password never spends the code budget.
   */
  async take(code: string, address: string, unlock: ShareUnlock = {}): Promise<TakeAnswer> {
    const s = await this.d.settings.get()
    const share = await this.checkCode(code, address, s)
    await this.unlock(share, unlock, address, s)
    return this.takeAnswerOf(share)
  }

  /**
   * The pickup link: its token is 128 random bits, so it is not guessable and never goes through
   * the guessing limits; a flood of wrong codes cannot keep its receiver out. A protected share
   * still needs its password (the link alone is not enough).
   */
  async takeByLink(token: string, address: string, unlock: ShareUnlock = {}): Promise<TakeAnswer> {
    const share = await this.shareOfLink(token)
    await this.unlock(share, unlock, address)
    return this.takeAnswerOf(share)
  }

  /**
   * A protected share's password or grant (SharePasswords); a share without a password costs
   * nothing here, not even the settings' read.
   */
  private async unlock(share: ShareRecord, unlock: ShareUnlock | undefined, address: string, s?: TSettings) {
    if (share.passwordHash === null) return
    await this.d.passwords.unlock(share, unlock ?? {}, address, s ?? (await this.d.settings.get()))
  }

  /** The answer of a take; a protected share's carries the access grant for its downloads. */
  private takeAnswerOf(share: ShareRecord): TakeAnswer {
    const answer: TakeAnswer = takeAnswer(share)
    if (share.passwordHash !== null) answer.access = this.d.passwords.grantFor(share)
    if (share.encryption) answer.encryption = share.encryption
    return answer
  }

  async openDownloadByLink(token: string, path: string, receiver: string, req: DownloadRequest = {}) {
    const share = await this.d.shares.findDownloadableByLinkToken(hashOf(token), this.d.clock.now())
    const file = share?.files.find((f) => f.pathname === path)
    if (!share) throw await this.endedOrNotFound({ linkTokenHash: hashOf(token) })
    if (!file) throw new ApiError('file_not_found', 'no such file in this share')
    if (isUsedUp(share) && !(await this.d.transfers.hasLive({ shareId: share.id, path, receiver })))
      throw shareUsedUp()
    await this.unlock(share, req.unlock, receiver)
    return this.serveFile(share, file, receiver, req)
  }

  private async shareOfLink(token: string): Promise<ShareRecord> {
    const share = await this.d.shares.findLiveByLinkToken(hashOf(token), this.d.clock.now())
    if (!share || share.remaining === 0) throw await this.endedOrNotFound({ linkTokenHash: hashOf(token) })
    return share
  }

  /** The error for a code or link that opens no live share: used up, expired, or not found. */
  private async endedOrNotFound(by: { code: string } | { linkTokenHash: string }): Promise<ApiError> {
    const end = await this.d.shares.endOf(by, this.d.clock.now())
    return end ? endedError(end) : shareNotFound()
  }

  /**
   * A download by typed code, checked under the guessing limits. A share whose downloads are
   * used up still serves a receiver whose transfer may be resumed (README "Downloads: what one download buys").
   */
  async openDownload(
    code: string,
    path: string,
    address: string,
    req: DownloadRequest = {},
  ): Promise<OpenDownload> {
    const s = await this.d.settings.get()
    const ticket = await this.d.guard.admit(address, s)
    let share: ShareRecord | null
    let resumable = true
    let end: ShareEnd | null = null
    const now = this.d.clock.now()
    try {
      share = await this.d.shares.findDownloadableByCode(code, now)
      if (share && isUsedUp(share))
        resumable = await this.d.transfers.hasLive({ shareId: share.id, path, receiver: address })
      if (!share) end = await this.d.shares.endOf({ code }, now)
    } catch (err) {
      await this.d.guard.succeeded(ticket)
      throw err
    }
    const file = share?.files.find((f) => f.pathname === path)
    // A code whose share is used up or expired is not a wrong guess: it spends nothing.
    if (end || (share && file && !resumable)) {
      await this.d.guard.succeeded(ticket)
      throw end ? endedError(end) : shareUsedUp()
    }
    if (!share || !file) {
      // A wrong path counts too: with a right code it would tell a guesser the code exists.
      this.d.guard.failed(ticket)
      throw share ? new ApiError('file_not_found', 'no such file in this share') : shareNotFound()
    }
    await this.d.guard.succeeded(ticket)
    // The code was right (its check given back): now the password, under its own budgets.
    await this.unlock(share, req.unlock, address, s)
    return this.serveFile(share, file, address, req)
  }

  /**
   * One request for a file: the whole file or one range of it (`If-Range` against the strong
   * ETag), a HEAD without counting, or a GET counted by the transfer rule (DownloadTransfers).
   */
  private async serveFile(
    share: ShareRecord,
    file: ShareRecord['files'][number],
    receiver: string,
    req: DownloadRequest,
  ): Promise<OpenDownload> {
    const size = file.size
    const preview = req.preview ? await this.previewable(file) : undefined
    const etag = strongEtag(file)
    let range: ByteRange | null = null
    if (req.range !== undefined && ifRangeAllows(req.ifRange, etag)) {
      const asked = parseRange(req.range, size)
      if (asked === 'unsatisfiable')
        throw new ApiError(
          'range_not_satisfiable',
          `the range is outside the file's ${size} bytes`,
          { size },
          { headers: { 'Content-Range': `bytes */${size}` } },
        )
      range = asked
    }
    const head = { name: file.name, type: file.type, size, etag, range, ...(preview ? { preview } : {}) }
    const driver = await this.d.instances.driver(file.storeInstance)
    if (!driver)
      throw new ApiError('storage_failed', `storage instance ${file.storeInstance} is not configured`)
    if (req.head) {
      // The file missing: the share may have ended meanwhile (its files went with it).
      if (!(await storePreflight(driver, file.pathname)))
        throw (await this.endedMeanwhile(share)) ?? fileMissing()
      return { ...head, stream: null, take: noTake, done: async () => {} }
    }
    const bytes = range ? range.end - range.start + 1 : size
    let admission: Admission | null = null
    if (share.maxDownloads !== null) {
      admission = await this.d.transfers.admit(
        share,
        { shareId: share.id, path: file.pathname, receiver },
        size,
        bytes,
      )
      if (!admission) throw await this.noDownloadLeft(share)
    }
    let opened: { stream: Readable; size: number }
    try {
      opened = await driver.openRead(file.pathname, range ?? undefined)
    } catch (err) {
      if (admission) await this.d.transfers.refund(share.id, admission)
      if (err instanceof ApiError && err.code === 'file_not_found')
        throw (await this.endedMeanwhile(share)) ?? err
      throw readFailure(err)
    }
    return { ...head, stream: opened.stream, ...this.metered(share, admission) }
  }

  /** take() and done() of a counted response (nothing to count without an admission). */
  private metered(
    share: ShareRecord,
    admission: Admission | null,
    giveBackUnsent = false,
  ): Pick<OpenDownload, 'take' | 'done'> {
    if (!admission) return { take: noTake, done: async () => {} }
    let finished = false
    return {
      take: (n) => this.d.transfers.take(admission, n),
      done: async (written) => {
        if (finished) return
        finished = true
        if (written === 0 && giveBackUnsent && (await this.d.transfers.giveBackUnsent(share.id, admission)))
          return
        if (await this.d.transfers.finish(share, admission, written)) await this.removeShare(share.id)
      },
    }
  }

  /**
   * Why a GET was not admitted: the share's downloads are spent (410 used up) — or the share was
   * deleted meanwhile (an administrator, or the sweeper): then what its code says now, the 404
   * the README promises for a deleted share, never "used up" for a share that had downloads left.
   */
  private async noDownloadLeft(share: ShareRecord): Promise<ApiError> {
    const now = this.d.clock.now()
    if (await this.d.shares.findById(share.id)) return shareUsedUp()
    const end = await this.d.shares.endOf({ code: share.code }, now)
    return end ? endedError(end) : shareNotFound()
  }

  /**
   * A file of `share` that the store no longer has: the share ended meanwhile (its last stream
   * finished and removed the files while this request was on its way) — say so, not "file not
   * found" — or null when it did not.
   */
  private async endedMeanwhile(share: ShareRecord): Promise<ApiError | null> {
    const end = await this.d.shares.endOf({ code: share.code }, this.d.clock.now()).catch(() => null)
    if (end) return endedError(end)
    // Used up when this request read it (its receiver's last transfer was still closing): the
    // files went with the share's end, whatever the rows say by now.
    if (isUsedUp(share)) return shareUsedUp()
    return null
  }

  /**
   * Download all: the whole share as one streamed ZIP (README "Download all"), counted as ONE
   * download by the transfer rule (a transfer of its own, `ARCHIVE_TRANSFER_PATH`, spent before
   * the first byte) and resumed with Range/If-Range within it, as a file is. The first file is
   * opened before the answer starts, so a store that fails then is an error in the envelope and
   * the download is given back; a client that goes away before any byte gets it back too. A
   * HEAD answers the archive's headers (its exact length) and counts nothing.
   */
  async openZip(
    by: { code: string } | { token: string },
    receiver: string,
    req: DownloadRequest = {},
  ): Promise<OpenDownload> {
    const share = await this.downloadableShare(by, receiver)
    const key = { shareId: share.id, path: ARCHIVE_TRANSFER_PATH, receiver }
    if (isUsedUp(share) && !(await this.d.transfers.hasLive(key))) throw shareUsedUp()
    await this.unlock(share, req.unlock, receiver)
    const files = [...share.files]
    const drivers = await Promise.all(files.map((f) => this.d.instances.driver(f.storeInstance)))
    const openFile = async (i: number): Promise<Readable> => {
      const driver = drivers[i]
      if (!driver)
        throw new ApiError('storage_failed', `storage instance ${files[i]!.storeInstance} is not configured`)
      return (await driver.openRead(files[i]!.pathname)).stream
    }
    let handFirst!: (opened: Readable) => void
    const first = new Promise<Readable>((resolve) => (handFirst = resolve))
    const zip = await zipOfFiles(
      files.map((f, i) => ({ name: f.name, size: f.size, open: i === 0 ? () => first : () => openFile(i) })),
      share.createdAt,
    )
    // The archive's bytes are a function of the share's files (stored entries, fixed names and
    // dates), so a strong ETag names them and a cut archive is resumed with a Range like a file.
    const etag = archiveEtag(share)
    let range: ByteRange | null = null
    if (req.range !== undefined && ifRangeAllows(req.ifRange, etag)) {
      const asked = parseRange(req.range, zip.size)
      if (asked === 'unsatisfiable') {
        zip.stream.destroy()
        throw new ApiError(
          'range_not_satisfiable',
          `the range is outside the archive's ${zip.size} bytes`,
          { size: zip.size },
          { headers: { 'Content-Range': `bytes */${zip.size}` } },
        )
      }
      range = asked
    }
    const answer = {
      name: `pickup-${share.code}.zip`,
      type: 'application/zip',
      size: zip.size,
      etag,
      range,
    }
    if (req.head) {
      zip.stream.destroy()
      for (const [i, f] of files.entries()) {
        const driver = drivers[i]
        if (!driver)
          throw new ApiError('storage_failed', `storage instance ${f.storeInstance} is not configured`)
        if (!(await storePreflight(driver, f.pathname)))
          throw (await this.endedMeanwhile(share)) ?? fileMissing()
      }
      return { ...answer, stream: null, take: noTake, done: async () => {} }
    }
    let admission: Admission | null = null
    try {
      if (share.maxDownloads !== null) {
        const bytes = range ? range.end - range.start + 1 : zip.size
        admission = await this.d.transfers.admit(share, key, zip.size, bytes)
        if (!admission) throw await this.noDownloadLeft(share)
      }
      handFirst(await openFile(0))
    } catch (err) {
      zip.stream.destroy()
      if (admission) await this.d.transfers.refund(share.id, admission)
      if (err instanceof ApiError && err.code === 'file_not_found')
        throw (await this.endedMeanwhile(share)) ?? err
      throw readFailure(err)
    }
    // An archive the client left before its first byte spends nothing.
    const stream = range ? sliceOf(zip.stream, range.start, range.end) : zip.stream
    return { ...answer, stream, ...this.metered(share, admission, true) }
  }

  /** The share a download names by link token, or by code under the guessing limits. */
  private async downloadableShare(by: { code: string } | { token: string }, address: string) {
    const now = this.d.clock.now()
    if ('token' in by) {
      const share = await this.d.shares.findDownloadableByLinkToken(hashOf(by.token), now)
      if (!share) throw await this.endedOrNotFound({ linkTokenHash: hashOf(by.token) })
      return share
    }
    const ticket = await this.d.guard.admit(address, await this.d.settings.get())
    let share: ShareRecord | null
    let end: ShareEnd | null = null
    try {
      share = await this.d.shares.findDownloadableByCode(by.code, now)
      if (!share) end = await this.d.shares.endOf({ code: by.code }, now)
    } catch (err) {
      await this.d.guard.succeeded(ticket)
      throw err
    }
    if (!share) {
      if (end) {
        await this.d.guard.succeeded(ticket)
        throw endedError(end)
      }
      this.d.guard.failed(ticket)
      throw shareNotFound()
    }
    await this.d.guard.succeeded(ticket)
    return share
  }

  /** A file may be previewed: previews on, its type on the list, at most the admin's size. */
  private async previewable(file: { type: string; size: number }) {
    const s = await this.d.settings.get()
    if (!s.previewEnabled)
      throw new ApiError('preview_unavailable', 'previews are switched off on this server')
    const preview = previewOf(file.type)
    if (!preview)
      throw new ApiError('preview_unavailable', `files of type ${file.type} are not previewed; download it`, {
        reason: 'type',
      })
    if (file.size > s.previewMaxBytes)
      throw new ApiError(
        'preview_unavailable',
        `files larger than ${s.previewMaxBytes} bytes are not previewed; download it`,
        { reason: 'size', previewMaxBytes: s.previewMaxBytes },
      )
    return preview
  }

  listShares(query: Omit<ShareListQuery, 'now'>) {
    return this.d.shares.list({ ...query, now: this.d.clock.now() })
  }

  /** Deletes a share, its rows and its files. Returns the share, or null when it was gone. */
  async removeShare(id: string, remember = true): Promise<ShareRecord | null> {
    const now = this.d.clock.now()
    // A share that ended by itself (used up, expired) is remembered for a while: its code and
    // link then say so instead of "no share" (README "Guessing pickup codes").
    const ended = remember ? { now, forgetAt: new Date(now.getTime() + ENDED_SHARE_KEPT_MS) } : undefined
    const share = await this.d.shares.delete(id, ended)
    if (!share) return null
    await this.d.gate.forget(id)
    for (const f of share.files) {
      await this.d.instances.free(f.storeInstance, f.size)
      const driver = this.d.storage.instance(f.storeInstance)
      await driver
        ?.delete(f.pathname)
        .catch((err) => this.d.logger.warn({ err, pathname: f.pathname }, 'file delete failed'))
    }
    return share
  }

  async removeShareByCode(code: string): Promise<ShareRecord> {
    const share = await this.d.shares.findByCode(code)
    if (!share) throw new ApiError('share_not_found', `no share with code ${code}`)
    await this.removeShare(share.id, false)
    return share
  }
}

/** A Content-Length other than the permission's size is refused before any byte is read. */
function checkDeclaredLength(claims: UploadClaims, declared: number): void {
  const max = claims.size ?? claims.maxBytes
  if (max !== null && declared > max)
    throw new ApiError(
      'file_too_large',
      claims.size !== null
        ? `Content-Length ${declared} is more than the ${claims.size} bytes the upload permission declared`
        : `the upload exceeds the limit of ${max} bytes`,
      { maximumSizeInBytes: max },
    )
  if (claims.size !== null && declared < claims.size)
    throw new ApiError(
      'size_mismatch',
      `Content-Length ${declared} is less than the ${claims.size} bytes the upload permission declared`,
    )
}

/**
 * A HEAD's look at the store (one stat): the page asks it before handing a download to the
 * browser, so a file the store lost or a store that is down is reported, not a 0-byte download.
 */
async function storePreflight(driver: StorageDriver, pathname: string): Promise<boolean> {
  try {
    return (await driver.stat(pathname)) !== null
  } catch (err) {
    throw readFailure(err)
  }
}

const fileMissing = () => new ApiError('storage_failed', 'the file is missing from storage')

/**
 * What a failure to open a file for reading answers: a store that is down (connection refused,
 * timed out) is 503 with Retry-After, like any dependency; anything else it answered is 502.
 */
function readFailure(err: unknown): ApiError {
  if (err instanceof ApiError) return err
  const mapped = toApiError(err)
  if (mapped.code === 'service_unavailable') return mapped
  return new ApiError('storage_failed', 'the file could not be read from storage', undefined, { cause: err })
}

/** No downloads left: a counted share at zero (take answers 404; only open transfers go on). */
const isUsedUp = (share: ShareRecord) => share.remaining === 0 || share.exhaustedAt !== null

/** How long an ended share's code and link still say "used up" / "expired" (then: not found). */
export const ENDED_SHARE_KEPT_MS = 30 * DAY_MS

type ShareEnd = { reason: 'used_up' | 'expired'; expiresAt: Date }

const shareUsedUp = () =>
  new ApiError('share_used_up', 'the downloads of this share are used up', { reason: 'used_up' })

const endedError = (end: ShareEnd) =>
  end.reason === 'expired'
    ? new ApiError('share_expired', `this share expired on ${end.expiresAt.toISOString()}`, {
        reason: 'expired',
        expiresAt: end.expiresAt.toISOString(),
      })
    : shareUsedUp()

const noTake = () => undefined

/** The strong ETag of a share's archive: its files (each named by its own strong ETag), in order. */
function archiveEtag(share: ShareRecord): string {
  const h = createHash('sha256').update(`archive\n${share.id}\n${share.createdAt.toISOString()}`)
  for (const f of share.files) h.update(`\n${f.name}\n${strongEtag(f)}`)
  return `"${h.digest('base64url').slice(0, 27)}"`
}

const shareNotFound = () => new ApiError('share_not_found', 'no share has this pickup code or link')

function takeAnswer(share: ShareRecord): { manifest: Manifest; remaining: number | null } {
  return {
    manifest: {
      code: share.code,
      files: share.files.map((f) => ({ name: f.name, size: f.size, type: f.type, path: f.pathname })),
      createdAt: share.createdAt,
      expiresAt: share.expiresAt,
    },
    remaining: share.remaining,
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
