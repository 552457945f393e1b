import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import { type RateLimiter, rateLimitError } from '@quartet/core/rate-limit'
import {
  type AllowancesPort,
  EVERYONE,
  type IssuedUploadRecord,
  type IssuedUploadsPort,
  onStore,
} from './ports.ts'
import type { StorageDriver, StoreKind } from './storage.ts'
import type { StorageInstances } from './storage-instances.ts'
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
  /**
   * The share of a store's capacity (its kind's quotas together) one client may hold in unshared
   * permissions beside `pendingBytesPerAddress` (UPLOAD_PENDING_STORE_FRACTION).
   */
  pendingStoreFraction: number
  /** A permission whose upload has not begun this long after its grant is released (UPLOAD_IDLE_RELEASE_SECONDS). */
  idleReleaseMs: number
}

/**
 * Stores a client uploads to directly (a presigned bucket URL): this server does not see such an
 * upload begin, only its finished file, so a permission there gets EXPIRY_GRACE_MS more.
 */
const ARRIVES_UNSEEN: readonly StoreKind[] = ['bucket']

/**
 * After the time to begin has passed, how long an upload that began in time may still be arriving
 * at a store the server does not see (a bucket): its reservation is kept that long.
 */
export const EXPIRY_GRACE_MS = 10 * 60_000

/** What an upload permission holds until it is shared or given back. */
type Held = Pick<IssuedUploadRecord, 'store' | 'storeInstance' | 'size' | 'clientKey'>

/**
 * The bytes upload permissions hold (issue 19 item 4). A permission reserves its declared size
 * three times: on a storage instance (its quota), in its client's allowance and in everyone's
 * (`upload_allowance`). Sharing the file turns the instance's reservation into used bytes and
 * gives the allowances back; a permission that expired unused (nothing started through this
 * server, nothing stored) gives everything back at the next sweep or as soon as a reservation is
 * refused for lack of room, whichever comes first; orphan clean-up releases the rest.
 *
 * Issue 48 item 3: one client cannot hold a store. Beside the absolute per-client limit, a client
 * may hold at most `pendingStoreFraction` of a kind's capacity on that kind (a fourth allowance,
 * `<kind>@<client>`, always counted so that it stays exact when quotas change; one permission of
 * any size when it holds nothing there), and a permission whose upload has not begun within
 * `idleReleaseMs` is "expired unused" — released within minutes, not after its whole validity. Each
 * release deletes the permission row first (one caller wins, also across processes) and only that
 * caller gives the bytes back, so the accounting stays exact.
 */
export class UploadReservations {
  constructor(
    private readonly d: {
      uploads: IssuedUploadsPort
      allowances: AllowancesPort
      instances: StorageInstances
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
      // A fraction of 1 is the whole store: no bound beyond the store's own (507 store_full).
      const capacity = limits.pendingStoreFraction < 1 ? await this.d.instances.capacity(kind) : null
      const part = capacity === null ? undefined : Math.floor(capacity * limits.pendingStoreFraction)
      await this.reserveAllowance(
        onStore(kind, clientKey),
        bytes,
        Number.MAX_SAFE_INTEGER,
        'pending_bytes',
        part,
      )
    } catch (err) {
      await this.d.allowances.release(clientKey, bytes)
      await this.d.allowances.release(EVERYONE, bytes)
      throw err
    }
    try {
      return await this.reserveOnInstance(kind, bytes)
    } catch (err) {
      await this.releaseAllowances(kind, clientKey, bytes)
      throw err
    }
  }

  /** A permission that was reserved but not recorded (issuing it failed): everything back. */
  async abandon(driver: StorageDriver, bytes: number, clientKey: string): Promise<void> {
    await this.d.instances.release(driver.instance, bytes)
    await this.releaseAllowances(driver.kind, clientKey, bytes)
  }

  /** The file was shared: the instance bytes became used bytes (StorageInstances.commit); allowances back. */
  async shared(held: Held): Promise<void> {
    if (held.clientKey !== null) await this.releaseAllowances(held.store, held.clientKey, held.size)
  }

  /** How long a permission's upload has to begin: the idle window, never more than its validity. */
  get timeToBegin(): number {
    return Math.min(this.d.limits.idleReleaseMs, this.d.limits.permissionTtlMs)
  }

  /** When the upload of a permission granted at `grantedAt` must have begun. */
  beginBy(grantedAt: Date): Date {
    return new Date(grantedAt.getTime() + this.timeToBegin)
  }

  /** When an unused permission of `store` granted at `grantedAt` is released. */
  private releasedAt(store: string, grantedAt: Date): number {
    const grace = (ARRIVES_UNSEEN as readonly string[]).includes(store) ? EXPIRY_GRACE_MS : 0
    return this.beginBy(grantedAt).getTime() + grace
  }

  /**
   * Gives back the reservations of permissions that expired unused: no upload began through this
   * server (blob, repo, tus) within the time to begin, and nothing is stored (a bucket: once
   * EXPIRY_GRACE_MS more has passed). Returns how many.
   */
  async releaseUnused(filter: { clientKey?: string } = {}): Promise<number> {
    const now = this.d.clock.now().getTime()
    const cutoff = new Date(now - this.timeToBegin)
    let released = 0
    for (const row of await this.d.uploads.unusedIssuedUploads(cutoff, filter)) {
      if (this.releasedAt(row.store, row.createdAt) > now) continue
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
      if (!(await this.d.uploads.deleteIssuedUploadIfUnshared(row.id, { unstarted: true }))) continue
      await this.released(row)
      released++
    }
    return released
  }

  /** Gives back the reservations of permissions older than `cutoff` that were never shared (orphans). */
  async releaseStale(cutoff: Date): Promise<number> {
    let released = 0
    for (const row of await this.d.uploads.staleIssuedUploads(cutoff)) {
      if (!(await this.d.uploads.deleteIssuedUploadIfUnshared(row.id))) continue
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
    const [row] = await this.d.uploads.issuedUploads([{ storeInstance, pathname }])
    if (!row || row.shareId !== null) return
    if (await this.d.uploads.deleteIssuedUploadIfUnshared(row.id)) await this.released(row)
  }

  /** The allowances of permissions deleted with their storage instance. */
  async releasedWithInstance(rows: Array<Pick<Held, 'store' | 'clientKey' | 'size'>>): Promise<void> {
    for (const r of rows) if (r.clientKey !== null) await this.releaseAllowances(r.store, r.clientKey, r.size)
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
    if (!(await this.d.uploads.shrinkIssuedUpload(row.id, row.size, to))) return false
    await this.released({ ...row, size: row.size - to })
    return true
  }

  /** A permission row was deleted by this caller: its bytes go back everywhere, once. */
  private async released(row: Held): Promise<void> {
    await this.d.instances.release(row.storeInstance, row.size)
    if (row.clientKey !== null) await this.releaseAllowances(row.store, row.clientKey, row.size)
  }

  private async releaseAllowances(kind: string, clientKey: string, bytes: number): Promise<void> {
    await this.d.allowances.release(clientKey, bytes)
    await this.d.allowances.release(EVERYONE, bytes)
    await this.d.allowances.release(onStore(kind, clientKey), bytes)
  }

  /**
   * One allowance (with `share`: the client's part of the store as well), reclaiming expired
   * unused permissions once before refusing.
   */
  private async reserveAllowance(
    key: string,
    bytes: number,
    limit: number,
    reason: 'pending_bytes' | 'pending_bytes_global',
    share?: number,
  ): Promise<void> {
    const { allowances } = this.d
    if (await allowances.reserve(key, bytes, limit, share)) return
    const client = key === EVERYONE ? null : key.slice(key.indexOf('@') + 1)
    if ((await this.releaseUnused(client === null ? {} : { clientKey: client })) > 0)
      if (await allowances.reserve(key, bytes, limit, share)) return
    const oldest = await this.d.uploads.oldestUnusedIssued(client)
    const freedAt = oldest
      ? this.releasedAt(oldest.store, oldest.createdAt)
      : this.d.clock.now().getTime() + this.timeToBegin
    const bound = share === undefined ? limit : Math.min(limit, share)
    throw limitExceeded(
      key === EVERYONE
        ? 'too many bytes are held by upload permissions not shared yet; try again later'
        : share !== undefined && share < limit
          ? `this address holds too many bytes in upload permissions not shared yet (at most ${bound}, its part of the store): share them or let them expire first`
          : 'this address holds too many bytes in upload permissions not shared yet: share or let them expire first',
      Math.max(1000, freedAt - this.d.clock.now().getTime()),
      { reason, limit: bound, requested: bytes },
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
