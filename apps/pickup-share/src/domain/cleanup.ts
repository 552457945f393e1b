import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import type { IssuedUploadsPort, SharesPort } from './ports.ts'
import type { ShareRemoval } from './share-removal.ts'
import type { UploadReservations } from './upload-reservations.ts'
import type { StorageRegistry } from './storage.ts'

export interface CleanupResult {
  removedFiles: number
  freedBytes: number
  /** Temporary files of uploads that never finished (a crash, a cut), removed. */
  partialFiles: number
  partialBytes: number
}

/**
 * Removes what no share needs any more: expired shares with their files, exhausted shares whose
 * last stream never reported back, and orphan uploads (objects no share holds, older than
 * ORPHAN_AFTER_HOURS).
 */
export class Cleanup {
  constructor(
    private readonly d: {
      shares: Pick<SharesPort, 'findEnded' | 'forgetEnded' | 'sharedPathnames'>
      uploads: Pick<IssuedUploadsPort, 'issuedUploads' | 'pendingPathnames'>
      removal: Pick<ShareRemoval, 'remove'>
      reservations: UploadReservations
      storage: StorageRegistry
      clock: Clock
      logger: Logger
      orphanAfterHours: number
      /**
       * The longest an upload may go without writing (UPLOAD_TOKEN_TTL_SECONDS): a temporary
       * file untouched this long belongs to no upload any more.
       */
      uploadWindowMs: number
      /** Loads storage instances other replicas added, so their orphans are swept too. */
      syncInstances?: () => Promise<unknown>
      /** Expires unfinished resumable (tus) uploads. */
      resumable?: { sweepExpired(): Promise<number> }
    },
  ) {}

  async removeEndedShares(): Promise<number> {
    const now = this.d.clock.now()
    const ids = await this.d.shares.findEnded(now, new Date(now.getTime() - 3_600_000))
    let removed = 0
    for (const id of ids) if (await this.d.removal.remove(id)) removed++
    await this.d.shares.forgetEnded(now)
    return removed
  }

  async removeOrphans(): Promise<CleanupResult> {
    const cutoff = new Date(this.d.clock.now().getTime() - this.d.orphanAfterHours * 3_600_000)
    const result: CleanupResult = { removedFiles: 0, freedBytes: 0, ...(await this.removePartials()) }
    for (const driver of this.d.storage.all()) {
      const shared = await this.d.shares.sharedPathnames(driver.instance)
      const pending = await this.d.uploads.pendingPathnames(driver.instance, cutoff)
      for await (const object of driver.list()) {
        if (shared.has(object.pathname) || pending.has(object.pathname)) continue
        // An object nobody issued (or whose record is gone) gets the same grace as an upload.
        if (
          object.lastModified > cutoff &&
          !(await this.issuedBefore(driver.instance, object.pathname, cutoff))
        )
          continue
        try {
          await driver.delete(object.pathname)
          result.removedFiles++
          result.freedBytes += object.size
        } catch (err) {
          this.d.logger.warn(
            { err, store: driver.instance, pathname: object.pathname },
            'orphan delete failed',
          )
        }
      }
    }
    await this.d.reservations.releaseStale(cutoff)
    return result
  }

  /**
   * Removes temporary files of uploads that never finished, in every store that keeps any: at
   * start-up those of this host's processes that are gone (kill -9), always those untouched for
   * longer than an upload may go without writing.
   */
  async removePartials(): Promise<Pick<CleanupResult, 'partialFiles' | 'partialBytes'>> {
    await this.d.syncInstances?.()
    const staleBefore = new Date(this.d.clock.now().getTime() - this.d.uploadWindowMs)
    const result = { partialFiles: 0, partialBytes: 0 }
    for (const driver of this.d.storage.all()) {
      if (!driver.removePartials) continue
      try {
        const removed = await driver.removePartials(staleBefore)
        result.partialFiles += removed.files
        result.partialBytes += removed.bytes
      } catch (err) {
        this.d.logger.warn({ err, store: driver.instance }, 'partial upload clean-up failed')
      }
    }
    if (result.partialFiles > 0) this.d.logger.info(result, 'removed partial uploads')
    return result
  }

  /** True when the object's upload permission is older than the cutoff (and it was never shared). */
  private async issuedBefore(storeInstance: string, pathname: string, cutoff: Date): Promise<boolean> {
    const [issued] = await this.d.uploads.issuedUploads([{ storeInstance, pathname }])
    return issued !== undefined && issued.shareId === null && issued.createdAt <= cutoff
  }

  async sweep(): Promise<
    { endedShares: number; unusedPermissions: number; expiredResumable: number } & CleanupResult
  > {
    const endedShares = await this.removeEndedShares()
    const unusedPermissions = await this.d.reservations.releaseUnused()
    const expiredResumable = (await this.d.resumable?.sweepExpired()) ?? 0
    const orphans = await this.removeOrphans()
    await this.d.reservations.repairAllowances()
    return { endedShares, unusedPermissions, expiredResumable, ...orphans }
  }
}
