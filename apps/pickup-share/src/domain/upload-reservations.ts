import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { type RateLimiter, rateLimitError } from '@quartet/core/rate-limit'
import { type AllowanceRepository, EVERYONE } from '../store/allowance-repository.ts'
import type { IssuedUploadRecord, ShareRepository } from '../store/share-repository.ts'
import type { StorageDriver, StoreKind } from './storage.ts'
import type { StoreInstances } from './store-instances.ts'
import { limitExceeded } from './window-counters.ts'

export interface UploadLimits {
  /** Permissions per client (IPv4 address, IPv6 /64) per window. */
  permissionsPerAddress: RateLimiter
  /** Permissions of everyone together per window. */
  permissionsGlobal: RateLimiter
  /** Bytes one client may hold in unshared permissions. */
  pendingBytesPerAddress: number
  /** Bytes everyone together may hold in unshared permissions. */
  pendingBytesGlobal: number
  /** How long a permission is valid (UPLOAD_TOKEN_TTL_SECONDS). */
  permissionTtlMs: number
}

/**
 * After a permission expires, how long an upload that started in time may still be arriving at
 * a store the server does not see (a bucket): its reservation is kept that long.
 */
export const EXPIRY_GRACE_MS = 10 * 60_000

/** What an upload permission holds until it is shared or given back. */
type Held = Pick<IssuedUploadRecord, 'storeInstance' | 'size' | 'clientKey'>

/**
 * The bytes upload permissions hold (issue 19 item 4). A permission reserves its declared size
 * three times: on a storage instance (its quota), in its client's allowance and in everyone's
 * (`upload_allowance`). Sharing the file turns the instance's reservation into used bytes and
 * gives the allowances back; a permission that expired unused (nothing started through this
 * server, nothing stored) gives everything back at the next sweep or as soon as a reservation is
 * refused for lack of room, whichever comes first; orphan clean-up releases the rest.
 */
export class UploadReservations {
  constructor(
    private readonly d: {
      shares: ShareRepository
      allowances: AllowanceRepository
      instances: StoreInstances
      limits: UploadLimits
      clock: Clock
      logger: Logger
    },
  ) {}

  /**
   * Everything a new permission needs, or 429/507 with nothing held: the permission counts, the
   * client's and everyone's pending bytes, then room on an instance of `kind`.
   */
  async reserve(kind: StoreKind, bytes: number, clientKey: string): Promise<StorageDriver> {
    const { limits } = this.d
    const mine = await limits.permissionsPerAddress.consume(clientKey)
    if (!mine.allowed)
      throw withReason(rateLimitError(mine, 'too many upload permissions from this address'), 'permissions')
    const all = await limits.permissionsGlobal.consume('all')
    if (!all.allowed)
      throw withReason(
        rateLimitError(all, 'too many upload permissions right now; try again later'),
        'permissions_global',
      )

    await this.reserveAllowance(clientKey, bytes, limits.pendingBytesPerAddress, 'pending_bytes')
    try {
      await this.reserveAllowance(EVERYONE, bytes, limits.pendingBytesGlobal, 'pending_bytes_global')
    } catch (err) {
      await this.d.allowances.release(clientKey, bytes)
      throw err
    }
    try {
      return await this.reserveOnInstance(kind, bytes)
    } catch (err) {
      await this.releaseAllowances(clientKey, bytes)
      throw err
    }
  }

  /** A permission that was reserved but not recorded (issuing it failed): everything back. */
  async abandon(driver: StorageDriver, bytes: number, clientKey: string): Promise<void> {
    await this.d.instances.release(driver.instance, bytes)
    await this.releaseAllowances(clientKey, bytes)
  }

  /** The file was shared: the instance bytes became used bytes (StoreInstances.commit); allowances back. */
  async shared(held: Held): Promise<void> {
    if (held.clientKey !== null) await this.releaseAllowances(held.clientKey, held.size)
  }

  /**
   * Gives back the reservations of permissions that expired unused: nothing started through this
   * server (blob, repo) and nothing stored once EXPIRY_GRACE_MS has passed. Returns how many.
   */
  async releaseUnused(filter: { clientKey?: string } = {}): Promise<number> {
    const cutoff = new Date(this.d.clock.now().getTime() - this.d.limits.permissionTtlMs - EXPIRY_GRACE_MS)
    let released = 0
    for (const row of await this.d.shares.unusedIssuedUploads(cutoff, filter)) {
      const driver = await this.d.instances.driver(row.storeInstance)
      try {
        // Something arrived after all (a bucket upload): kept until shared or orphaned.
        if (driver && (await driver.stat(row.pathname))) continue
      } catch (err) {
        this.d.logger.warn(
          { err, store: row.storeInstance },
          'cannot tell whether an upload arrived; its reservation stays',
        )
        continue
      }
      if (!(await this.d.shares.deleteIssuedUploadIfUnshared(row.id, { unstarted: true }))) continue
      await this.released(row)
      released++
    }
    return released
  }

  /** Gives back the reservations of permissions older than `cutoff` that were never shared (orphans). */
  async releaseStale(cutoff: Date): Promise<number> {
    let released = 0
    for (const row of await this.d.shares.staleIssuedUploads(cutoff)) {
      if (!(await this.d.shares.deleteIssuedUploadIfUnshared(row.id))) continue
      await this.released(row)
      released++
    }
    return released
  }

  /**
   * The store had no room for an upload (507): its permission ends now and its bytes go back at
   * once, everywhere, instead of waiting for expiry or orphan clean-up.
   */
  async storeHadNoRoom(storeInstance: string, pathname: string): Promise<void> {
    const [row] = await this.d.shares.issuedUploads([{ storeInstance, pathname }])
    if (!row || row.shareId !== null) return
    if (await this.d.shares.deleteIssuedUploadIfUnshared(row.id)) await this.released(row)
  }

  /** The allowances of permissions deleted with their storage instance. */
  async releasedWithInstance(rows: Array<Pick<Held, 'clientKey' | 'size'>>): Promise<void> {
    for (const r of rows) if (r.clientKey !== null) await this.releaseAllowances(r.clientKey, r.size)
  }

  /** Corrects allowances a crash left holding bytes no permission holds (quiet rows only). */
  repairAllowances(): Promise<number> {
    return this.d.allowances.repair(5 * 60_000, this.d.clock.now())
  }

  /** A permission row this caller deleted: its bytes go back everywhere, once. */
  releaseRow(row: Held): Promise<void> {
    return this.released(row)
  }

  /**
   * A permission granted for up to `from` bytes whose file arrived with `to` (a Vercel client
   * upload declares no size): the permission is for exactly `to` from now on and the difference
   * goes back everywhere. False when the permission changed meanwhile (shared, released).
   */
  async shrink(row: Held & { id: string }, to: number): Promise<boolean> {
    if (to >= row.size) return to === row.size
    if (!(await this.d.shares.shrinkIssuedUpload(row.id, row.size, to))) return false
    await this.released({ ...row, size: row.size - to })
    return true
  }

  /** A permission row was deleted by this caller: its bytes go back everywhere, once. */
  private async released(row: Held): Promise<void> {
    await this.d.instances.release(row.storeInstance, row.size)
    if (row.clientKey !== null) await this.releaseAllowances(row.clientKey, row.size)
  }

  private async releaseAllowances(clientKey: string, bytes: number): Promise<void> {
    await this.d.allowances.release(clientKey, bytes)
    await this.d.allowances.release(EVERYONE, bytes)
  }

  /** One allowance, reclaiming expired unused permissions once before refusing. */
  private async reserveAllowance(
    key: string,
    bytes: number,
    limit: number,
    reason: 'pending_bytes' | 'pending_bytes_global',
  ): Promise<void> {
    if (await this.d.allowances.reserve(key, bytes, limit)) return
    const mine = key === EVERYONE ? {} : { clientKey: key }
    if ((await this.releaseUnused(mine)) > 0 && (await this.d.allowances.reserve(key, bytes, limit))) return
    const oldest = await this.d.shares.oldestUnusedIssuedAt(key === EVERYONE ? null : key)
    const freedAt = oldest
      ? oldest.getTime() + this.d.limits.permissionTtlMs + EXPIRY_GRACE_MS
      : this.d.clock.now().getTime() + this.d.limits.permissionTtlMs
    throw limitExceeded(
      key === EVERYONE
        ? 'too many bytes are held by upload permissions not shared yet; try again later'
        : 'this address holds too many bytes in upload permissions not shared yet: share or let them expire first',
      Math.max(1000, freedAt - this.d.clock.now().getTime()),
      { reason, limit, requested: bytes },
    )
  }

  /** Room on an instance, reclaiming expired unused permissions once before answering store_full. */
  private async reserveOnInstance(kind: StoreKind, bytes: number): Promise<StorageDriver> {
    try {
      return await this.d.instances.reserve(kind, bytes)
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 'store_full') || (await this.releaseUnused()) === 0)
        throw err
      return this.d.instances.reserve(kind, bytes)
    }
  }
}

function withReason(err: ApiError, reason: string): ApiError {
  return new ApiError(err.code, err.message, { ...err.details, reason }, { headers: err.headers ?? {} })
}
