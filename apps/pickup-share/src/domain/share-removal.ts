import type { Clock } from '@quartet/core/clock'
import type { Logger } from '@quartet/core/log'
import type { DownloadGate } from './download-gate.ts'
import type { ShareRecord, SharesPort } from './ports.ts'
import type { StorageRegistry } from './storage.ts'
import type { StorageInstances } from './storage-instances.ts'

/** How long an ended share's code and link still say "used up" / "expired" (then: not found). */
export const ENDED_SHARE_KEPT_MS = 30 * 86_400_000

export interface ShareRemovalDeps {
  shares: Pick<SharesPort, 'delete'>
  gate: Pick<DownloadGate, 'forget'>
  instances: Pick<StorageInstances, 'free'>
  storage: Pick<StorageRegistry, 'instance'>
  clock: Clock
  logger: Logger
}

/**
 * Ending a share: its last download finished, it expired (the sweeper), an administrator deleted
 * it or the storage instance holding its files.
 */
export class ShareRemoval {
  constructor(private readonly d: ShareRemovalDeps) {}

  /** Deletes a share, its rows and its files. Returns the share, or null when it was gone. */
  async remove(id: string, remember = true): Promise<ShareRecord | null> {
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
}
