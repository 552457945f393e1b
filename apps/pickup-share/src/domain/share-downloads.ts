import type { Readable } from 'node:stream'
import { hashToken as hashOf } from '@quartet/core/auth'
import type { Clock } from '@quartet/core/clock'
import { ApiError, toApiError } from '@quartet/core/errors'
import { type Admission, type DownloadTransfers, ifRangeAllows, parseRange, strongEtag } from './downloads.ts'
import { type PreviewKind, previewOf } from './filenames.ts'
import type { GuessGuard } from './guess-guard.ts'
import type { ShareEnd, ShareRecord, SharesPort } from './ports.ts'
import type { SettingsService } from './settings.ts'
import {
  endedError,
  endedOrNotFound,
  isUsedUp,
  shareNotFound,
  shareUsedUp,
  unlockShare,
} from './share-access.ts'
import type { SharePasswords, ShareUnlock } from './share-passwords.ts'
import { ARCHIVE_TRANSFER_PATH, archiveEtag, sliceOf, zipOfFiles } from './share-zip.ts'
import type { ByteRange, StorageDriver } from './storage.ts'
import type { StorageInstances } from './storage-instances.ts'

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

export interface ShareDownloadsDeps {
  shares: Pick<SharesPort, 'findDownloadableByCode' | 'findDownloadableByLinkToken' | 'findById' | 'endOf'>
  settings: SettingsService
  guard: GuessGuard
  passwords: SharePasswords
  transfers: DownloadTransfers
  instances: Pick<StorageInstances, 'driver'>
  /** Removes a share whose last download finished (ShareRemoval). */
  removeShare(id: string): Promise<unknown>
  clock: Clock
}

/** Downloads of a share's files, one by one or all as one archive, counted by the transfer rule. */
export class ShareDownloads {
  constructor(private readonly d: ShareDownloadsDeps) {}

  async openDownloadByLink(token: string, path: string, receiver: string, req: DownloadRequest = {}) {
    const share = await this.d.shares.findDownloadableByLinkToken(hashOf(token), this.d.clock.now())
    const file = share?.files.find((f) => f.pathname === path)
    if (!share) throw await endedOrNotFound(this.d, { linkTokenHash: hashOf(token) })
    if (!file) throw new ApiError('file_not_found', 'no such file in this share')
    if (isUsedUp(share) && !(await this.d.transfers.hasLive({ shareId: share.id, path, receiver })))
      throw shareUsedUp()
    await unlockShare(this.d, share, req.unlock, receiver)
    return this.serveFile(share, file, receiver, req)
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
    await unlockShare(this.d, share, req.unlock, address, s)
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
        if (await this.d.transfers.finish(share, admission, written)) await this.d.removeShare(share.id)
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
    await unlockShare(this.d, share, req.unlock, receiver)
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
      if (!share) throw await endedOrNotFound(this.d, { linkTokenHash: hashOf(by.token) })
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

const noTake = () => undefined
