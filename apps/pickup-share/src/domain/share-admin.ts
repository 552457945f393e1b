import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { ShareListQuery, ShareRecord, SharesPort } from './ports.ts'
import type { ShareRemoval } from './share-removal.ts'

export interface ShareAdminDeps {
  shares: Pick<SharesPort, 'list' | 'findByCode'>
  removal: Pick<ShareRemoval, 'remove'>
  clock: Clock
}

/** The admin area's shares: the list, and deleting one by its code. */
export class ShareAdmin {
  constructor(private readonly d: ShareAdminDeps) {}

  listShares(query: Omit<ShareListQuery, 'now'>) {
    return this.d.shares.list({ ...query, now: this.d.clock.now() })
  }

  async removeShareByCode(code: string): Promise<ShareRecord> {
    const share = await this.d.shares.findByCode(code)
    if (!share) throw new ApiError('share_not_found', `no share with code ${code}`)
    await this.d.removal.remove(share.id, false)
    return share
  }
}
