import { randomUUID } from 'node:crypto'
import { ApiError } from '@quartet/core/errors'
import type { Logger } from '@quartet/core/log'
import type { InstanceRecord, InstancesPort } from './ports.ts'
import type { StorageDriver, StorageRegistry, StoreKind } from './storage.ts'

/** Settings keys that hold credentials: stored, never returned. */
export const SECRET_SETTINGS = ['token', 'accessKey', 'secretKey'] as const

/** Builds the driver of an admin-defined instance from its stored settings (throws when invalid). */
export type DriverFactory = (kind: StoreKind, id: string, settings: Record<string, unknown>) => StorageDriver

export interface InstanceView {
  id: string
  kind: string
  name: string
  /** Connection settings without credentials. */
  settings: Record<string, unknown>
  /** Names of the credentials that are set (their values are write-only). */
  credentialsSet: string[]
  quotaBytes: number | null
  usedBytes: number
  reservedBytes: number
  freeBytes: number | null
  enabled: boolean
  builtin: boolean
  /** false when this process could not build a driver for it (bad settings). */
  available: boolean
  createdAt: Date
  updatedAt: Date
}

export interface UpsertInstance {
  name: string
  kind?: StoreKind | undefined
  settings?: Record<string, unknown> | undefined
  quotaBytes?: number | null | undefined
  enabled?: boolean | undefined
}

/**
 * Storage instances: the environment-defined ones (built in, one per configured kind) and any
 * number added by an administrator, each with a quota. Upload permissions reserve their declared
 * size on an instance with room; the reservation turns into used bytes when the file is shared and
 * is given back by orphan clean-up.
 */
export class StorageInstances {
  private builtinsReady: Promise<void> | null = null
  /** The drivers built from environment variables, present before any admin-defined one. */
  private readonly builtinIds: Set<string>

  constructor(
    private readonly d: {
      repo: InstancesPort
      storage: StorageRegistry
      factory: DriverFactory
      logger: Logger
      /** Deletes a share and its files (forced instance delete). */
      removeShare: (shareId: string) => Promise<unknown>
      /** Gives back the client allowances of permissions deleted with an instance. */
      releasedWithInstance?: (
        rows: Array<{ clientKey: string | null; size: number; store: string }>,
      ) => Promise<void>
    },
  ) {
    this.builtinIds = new Set(d.storage.all().map((driver) => driver.instance))
  }

  /** Rows for the environment-defined drivers, once per process. */
  private ensureBuiltins(): Promise<void> {
    this.builtinsReady ??= (async () => {
      for (const driver of this.d.storage.all())
        await this.d.repo.ensureBuiltin({ id: driver.instance, kind: driver.kind, name: driver.instance })
    })().catch((err) => {
      this.builtinsReady = null
      throw err
    })
    return this.builtinsReady
  }

  private build(row: InstanceRecord): StorageDriver | undefined {
    try {
      const driver = this.d.factory(row.kind as StoreKind, row.id, row.settings)
      this.d.storage.add(driver)
      return driver
    } catch (err) {
      this.d.logger.warn({ store: row.name, err: (err as Error).message }, 'storage instance unusable')
      return undefined
    }
  }

  /** Brings this process' registry in line with the table (instances added by another replica). */
  async sync(): Promise<InstanceRecord[]> {
    await this.ensureBuiltins()
    const rows = await this.d.repo.list()
    const ids = new Set(rows.map((r) => r.id))
    for (const row of rows) if (!row.builtin && !this.d.storage.instance(row.id)) this.build(row)
    for (const driver of this.d.storage.all())
      if (!ids.has(driver.instance) && !this.isBuiltinDriver(driver)) this.d.storage.remove(driver.instance)
    return rows
  }

  private isBuiltinDriver(driver: StorageDriver): boolean {
    return this.builtinIds.has(driver.instance)
  }

  /** The driver of an instance id, loading it from the table when another replica created it. */
  async driver(id: string): Promise<StorageDriver | undefined> {
    const known = this.d.storage.instance(id)
    if (known) return known
    const row = await this.d.repo.find(id)
    return row && !row.builtin ? this.build(row) : undefined
  }

  /**
   * Picks an enabled instance of `kind` with room for `bytes` and reserves them atomically.
   * Built-in instance first, then the others by name.
   */
  async reserve(kind: StoreKind, bytes: number): Promise<StorageDriver> {
    const rows = (await this.sync()).filter((r) => r.kind === kind && this.d.storage.instance(r.id))
    const usable = rows.filter((r) => r.enabled)
    if (usable.length === 0)
      throw new ApiError('store_unavailable', `the ${kind} store is not enabled on this server`, {
        enabled: [
          ...new Set(
            (await this.d.repo.list())
              .filter((r) => r.enabled && this.d.storage.instance(r.id))
              .map((r) => r.kind),
          ),
        ],
      })
    usable.sort((a, b) => Number(b.builtin) - Number(a.builtin) || a.name.localeCompare(b.name))
    for (const row of usable) {
      if (await this.d.repo.reserve(row.id, bytes)) return this.d.storage.instance(row.id)!
    }
    throw new ApiError('store_full', `no ${kind} storage instance has room for ${bytes} more bytes`)
  }

  /**
   * What the enabled instances of `kind` can hold together (their quotas), or null when one of
   * them has no quota (then only the absolute limits bound a client).
   */
  async capacity(kind: StoreKind): Promise<number | null> {
    const rows = (await this.sync()).filter(
      (r) => r.kind === kind && r.enabled && this.d.storage.instance(r.id),
    )
    if (rows.length === 0 || rows.some((r) => r.quotaBytes === null)) return null
    return rows.reduce((sum, r) => sum + r.quotaBytes!, 0)
  }

  release(id: string, bytes: number): Promise<void> {
    return this.d.repo.release(id, bytes)
  }

  commit(id: string, reserved: number, real: number): Promise<void> {
    return this.d.repo.commit(id, reserved, real)
  }

  free(id: string, bytes: number): Promise<void> {
    return this.d.repo.free(id, bytes)
  }

  async list(): Promise<InstanceView[]> {
    const rows = await this.sync()
    return rows.map((r) => this.view(r))
  }

  view(r: InstanceRecord): InstanceView {
    const settings: Record<string, unknown> = {}
    const credentialsSet: string[] = []
    for (const [k, v] of Object.entries(r.settings)) {
      if ((SECRET_SETTINGS as readonly string[]).includes(k)) {
        if (v) credentialsSet.push(k)
      } else settings[k] = v
    }
    return {
      id: r.id,
      kind: r.kind,
      name: r.name,
      settings,
      credentialsSet,
      quotaBytes: r.quotaBytes,
      usedBytes: r.usedBytes,
      reservedBytes: r.reservedBytes,
      freeBytes: r.quotaBytes === null ? null : r.quotaBytes - r.usedBytes - r.reservedBytes,
      enabled: r.enabled,
      builtin: r.builtin,
      available: this.d.storage.instance(r.id) !== undefined,
      createdAt: r.createdAt,
      updatedAt: r.updatedAt,
    }
  }

  /**
   * Creates an instance, or changes one found by name (quota, enabled; settings of admin-defined
   * ones, where credentials left out keep their stored value). Settings are tried by building a
   * driver before anything is saved.
   */
  async upsert(input: UpsertInstance): Promise<{ created: boolean; instance: InstanceView }> {
    await this.sync()
    const existing = await this.d.repo.findByName(input.name)
    if (!existing) {
      if (!input.kind) throw new ApiError('bad_request', 'body.kind: required when creating an instance')
      const id = randomUUID()
      const settings = input.settings ?? {}
      this.tryBuild(input.kind, id, settings)
      const created = await this.d.repo.create({
        id,
        kind: input.kind,
        name: input.name,
        settings,
        quotaBytes: input.quotaBytes ?? null,
        enabled: input.enabled ?? true,
      })
      if (!created) throw new ApiError('store_exists', `a storage instance named ${input.name} exists`)
      await this.driver(id)
      return { created: true, instance: this.view((await this.d.repo.find(id))!) }
    }
    if (input.kind && input.kind !== existing.kind)
      throw new ApiError('bad_request', `body.kind: instance ${input.name} is a ${existing.kind} store`)
    let settings: Record<string, unknown> | undefined
    if (input.settings) {
      if (existing.builtin)
        throw new ApiError(
          'store_builtin',
          'the settings of a built-in instance come from environment variables; only quota and enabled can change',
        )
      settings = { ...input.settings }
      for (const k of SECRET_SETTINGS)
        if (settings[k] === undefined && existing.settings[k] !== undefined)
          settings[k] = existing.settings[k]
      this.tryBuild(existing.kind as StoreKind, existing.id, settings)
    }
    const updated = await this.d.repo.update(existing.id, {
      settings,
      enabled: input.enabled,
      quotaBytes: input.quotaBytes,
    })
    if (!updated) throw new ApiError('store_not_found', `no storage instance named ${input.name}`)
    if (settings) {
      this.d.storage.remove(existing.id)
      this.build(updated)
    }
    return { created: false, instance: this.view(updated) }
  }

  private tryBuild(kind: StoreKind, id: string, settings: Record<string, unknown>): void {
    try {
      this.d.factory(kind, id, settings)
    } catch (err) {
      if (err instanceof ApiError) throw err
      throw new ApiError('bad_request', `body.settings: ${(err as Error).message}`)
    }
  }

  /**
   * Deletes an instance. Refused (409 store_in_use) while live shares hold files there, unless
   * forced: then those shares (and their files) are deleted first.
   */
  async delete(name: string, force: boolean): Promise<{ deletedShares: number; instance: InstanceView }> {
    await this.sync()
    const row = await this.d.repo.findByName(name)
    if (!row) throw new ApiError('store_not_found', `no storage instance named ${name}`)
    if (row.builtin)
      throw new ApiError(
        'store_builtin',
        'a built-in instance is defined by environment variables; disable it instead',
      )
    const shareIds = await this.d.repo.shareIdsUsing(row.id)
    if (shareIds.length > 0 && !force)
      throw new ApiError('store_in_use', `${shareIds.length} live share(s) hold files in ${name}`, {
        shares: shareIds.length,
      })
    // Nothing new lands here while the shares go.
    await this.d.repo.update(row.id, { enabled: false })
    for (const id of shareIds) await this.d.removeShare(id)
    const left = await this.d.repo.shareIdsUsing(row.id)
    if (left.length > 0)
      throw new ApiError('store_in_use', `${left.length} share(s) were added meanwhile; try again`)
    await this.d.releasedWithInstance?.(await this.d.repo.deletePendingUploads(row.id))
    await this.d.repo.delete(row.id)
    this.d.storage.remove(row.id)
    return { deletedShares: shareIds.length, instance: this.view(row) }
  }
}
