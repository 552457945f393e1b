import { Prisma } from '../generated/prisma/client.ts'
import type { InstancePatch, InstanceRecord, InstancesPort, NewInstance } from '../domain/ports.ts'
import { type Db, rawOf } from './db.ts'

/**
 * A `store_instance` row as Prisma returns it (bigints as bigint), or as the plain SQL of
 * SQL_COLUMNS does (pg gives bigints as text): Number() reads both.
 */
type Row = Omit<Prisma.StoreInstanceGetPayload<object>, 'quotaBytes' | 'usedBytes' | 'reservedBytes'> & {
  quotaBytes: bigint | string | null
  usedBytes: bigint | string
  reservedBytes: bigint | string
}

/** Prisma's field names, so toRecord maps either kind of row. */
const SQL_COLUMNS = `id, kind, name, settings, quota_bytes AS "quotaBytes", used_bytes AS "usedBytes",
  reserved_bytes AS "reservedBytes", enabled, builtin, created_at AS "createdAt", updated_at AS "updatedAt"`

function toRecord(row: Row): InstanceRecord {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    settings: (row.settings ?? {}) as Record<string, unknown>,
    quotaBytes: row.quotaBytes === null ? null : Number(row.quotaBytes),
    usedBytes: Number(row.usedBytes),
    reservedBytes: Number(row.reservedBytes),
    enabled: row.enabled,
    builtin: row.builtin,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  }
}

/**
 * Storage instances and their byte accounting. Every change of used/reserved bytes is one
 * UPDATE that moves `free_bytes` (quota - used - reserved) along, and a reservation is the
 * conditional `free_bytes >= size`: Postgres re-checks it under the row lock, so concurrent
 * reservations can never take an instance past its quota.
 */
export class InstanceRepository implements InstancesPort {
  constructor(private readonly db: Db) {}

  /**
   * The reads of the start-up sync (ensureBuiltin's check, list) run as plain SQL on the pool
   * under the client (rawOf) when there is one: through Prisma, the start of every process
   * loaded and compiled its query compiler (WebAssembly) for them, about 7 MB of RSS that stayed
   * (bench/memory), though the requests of a running service may never need Prisma.
   */
  private sql<R extends object>(
    text: (table: string) => string,
    values: unknown[] = [],
  ): Promise<R[]> | null {
    const raw = rawOf(this.db)
    if (!raw) return null
    return raw.pool.query<R>(text(`${raw.schema}.store_instance`), values).then((r) => r.rows)
  }

  private async exists(id: string): Promise<boolean> {
    const viaSql = this.sql<{ id: string }>((t) => `SELECT id FROM ${t} WHERE id = $1`, [id])
    if (viaSql) return (await viaSql).length > 0
    return (await this.db.storeInstance.findUnique({ where: { id }, select: { id: true } })) !== null
  }

  async list(): Promise<InstanceRecord[]> {
    const viaSql = this.sql<Row>((t) => `SELECT ${SQL_COLUMNS} FROM ${t} ORDER BY kind, name`)
    if (viaSql) return (await viaSql).map(toRecord)
    const rows = await this.db.storeInstance.findMany({ orderBy: [{ kind: 'asc' }, { name: 'asc' }] })
    return rows.map(toRecord)
  }

  async find(id: string): Promise<InstanceRecord | null> {
    const row = await this.db.storeInstance.findUnique({ where: { id } })
    return row ? toRecord(row) : null
  }

  async findByName(name: string): Promise<InstanceRecord | null> {
    const row = await this.db.storeInstance.findUnique({ where: { name } })
    return row ? toRecord(row) : null
  }

  /**
   * Inserts a built-in (environment-defined) instance unless it is there already, counting the
   * files shared and the permissions pending before instances existed.
   */
  async ensureBuiltin(i: { id: string; kind: string; name: string }): Promise<void> {
    if (await this.exists(i.id)) return
    const [used, reserved] = await Promise.all([
      this.db.shareFile.aggregate({ where: { storeInstance: i.id }, _sum: { size: true } }),
      this.db.issuedUpload.aggregate({ where: { storeInstance: i.id, shareId: null }, _sum: { size: true } }),
    ])
    await this.db.storeInstance.upsert({
      where: { id: i.id },
      create: {
        id: i.id,
        kind: i.kind,
        name: i.name,
        builtin: true,
        usedBytes: used._sum.size ?? 0n,
        reservedBytes: reserved._sum.size ?? 0n,
      },
      update: {},
    })
  }

  /** false when the name is taken. */
  async create(i: NewInstance): Promise<boolean> {
    try {
      await this.db.storeInstance.create({
        data: {
          id: i.id,
          kind: i.kind,
          name: i.name,
          settings: i.settings as Prisma.InputJsonValue,
          quotaBytes: i.quotaBytes === null ? null : BigInt(i.quotaBytes),
          freeBytes: i.quotaBytes === null ? null : BigInt(i.quotaBytes),
          enabled: i.enabled,
        },
      })
      return true
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return false
      throw err
    }
  }

  /**
   * Changes settings, enabled flag and quota. The quota change recomputes free_bytes against the
   * used/reserved bytes it read, conditionally on those being unchanged (retried otherwise).
   */
  async update(id: string, patch: InstancePatch): Promise<InstanceRecord | null> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const row = await this.db.storeInstance.findUnique({ where: { id } })
      if (!row) return null
      const data: Prisma.StoreInstanceUpdateManyMutationInput = {}
      if (patch.settings) data.settings = patch.settings as Prisma.InputJsonValue
      if (patch.enabled !== undefined) data.enabled = patch.enabled
      if (patch.quotaBytes !== undefined) {
        data.quotaBytes = patch.quotaBytes === null ? null : BigInt(patch.quotaBytes)
        data.freeBytes =
          patch.quotaBytes === null ? null : BigInt(patch.quotaBytes) - row.usedBytes - row.reservedBytes
      }
      const { count } = await this.db.storeInstance.updateMany({
        where: { id, usedBytes: row.usedBytes, reservedBytes: row.reservedBytes },
        data,
      })
      if (count === 1) return this.find(id)
    }
    throw new Error(`store instance ${id} changed too often to update`)
  }

  async delete(id: string): Promise<boolean> {
    const { count } = await this.db.storeInstance.deleteMany({ where: { id } })
    return count === 1
  }

  /** Reserves `bytes` on an enabled instance with room: one conditional UPDATE. */
  async reserve(id: string, bytes: number): Promise<boolean> {
    const b = BigInt(bytes)
    const limited = await this.db.storeInstance.updateMany({
      where: { id, enabled: true, freeBytes: { gte: b } },
      data: { reservedBytes: { increment: b }, freeBytes: { decrement: b } },
    })
    if (limited.count === 1) return true
    const unlimited = await this.db.storeInstance.updateMany({
      where: { id, enabled: true, quotaBytes: null },
      data: { reservedBytes: { increment: b } },
    })
    return unlimited.count === 1
  }

  /** Gives a reservation back (its permission was never shared). */
  async release(id: string, bytes: number): Promise<void> {
    const b = BigInt(bytes)
    await this.db.storeInstance.updateMany({
      where: { id },
      data: { reservedBytes: { decrement: b }, freeBytes: { increment: b } },
    })
  }

  /** A shared file: its reservation becomes used bytes of its real size. */
  async commit(id: string, reserved: number, real: number): Promise<void> {
    await this.db.storeInstance.updateMany({
      where: { id },
      data: {
        reservedBytes: { decrement: BigInt(reserved) },
        usedBytes: { increment: BigInt(real) },
        freeBytes: { decrement: BigInt(real - reserved) },
      },
    })
  }

  /** Files of a deleted share free their bytes. */
  async free(id: string, bytes: number): Promise<void> {
    const b = BigInt(bytes)
    await this.db.storeInstance.updateMany({
      where: { id },
      data: { usedBytes: { decrement: b }, freeBytes: { increment: b } },
    })
  }

  /** Codes of the live shares holding files in the instance. */
  async shareIdsUsing(id: string): Promise<string[]> {
    const rows = await this.db.shareFile.findMany({
      where: { storeInstance: id },
      select: { shareId: true },
      distinct: ['shareId'],
    })
    return rows.map((r) => r.shareId)
  }

  /**
   * Unshared permissions of the instance, deleted with it (the instance's reservation goes with
   * its row); returns what each deleted permission held, so its client's allowance is given back.
   */
  async deletePendingUploads(
    id: string,
  ): Promise<Array<{ clientKey: string | null; size: number; store: string }>> {
    const rows = await this.db.issuedUpload.findMany({
      where: { storeInstance: id, shareId: null },
      select: { id: true, clientKey: true, size: true, store: true },
    })
    const deleted = []
    for (const r of rows) {
      const { count } = await this.db.issuedUpload.deleteMany({ where: { id: r.id, shareId: null } })
      if (count === 1) deleted.push({ clientKey: r.clientKey, size: Number(r.size), store: r.store })
    }
    return deleted
  }
}
