import type { Prisma } from '../generated/prisma/client.ts'
import type { IssuedUploadRecord, IssuedUploadsPort, NewIssuedUpload } from '../domain/ports.ts'
import type { Db } from './db.ts'

function toIssued(row: Prisma.IssuedUploadGetPayload<object>): IssuedUploadRecord {
  return {
    id: row.id,
    store: row.store,
    storeInstance: row.storeInstance,
    pathname: row.pathname,
    name: row.name,
    size: Number(row.size),
    type: row.type,
    maxBytes: row.maxBytes === null ? null : Number(row.maxBytes),
    authCodeId: row.authCodeId,
    clientKey: row.clientKey,
    createdAt: row.createdAt,
    uploadStartedAt: row.uploadStartedAt,
    resumableUntil: row.resumableUntil,
    shareId: row.shareId,
  }
}

/**
 * The upload permissions this server issued (`issued_upload`): each holds its declared size
 * until its file is shared or it is given back. Every decision is one conditional statement.
 */
export class IssuedUploadRepository implements IssuedUploadsPort {
  constructor(private readonly db: Db) {}

  async recordIssuedUpload(u: NewIssuedUpload): Promise<void> {
    await this.db.issuedUpload.create({
      data: { ...u, size: BigInt(u.size), maxBytes: u.maxBytes === null ? null : BigInt(u.maxBytes) },
    })
  }

  async issuedUploads(
    keys: Array<{ storeInstance: string; pathname: string }>,
  ): Promise<IssuedUploadRecord[]> {
    if (keys.length === 0) return []
    const rows = await this.db.issuedUpload.findMany({
      where: { OR: keys.map((k) => ({ storeInstance: k.storeInstance, pathname: k.pathname })) },
    })
    return rows.map(toIssued)
  }

  /** Unshared upload permissions younger than `cutoff`: their objects may still be shared. */
  async pendingPathnames(storeInstance: string, cutoff: Date): Promise<Set<string>> {
    const rows = await this.db.issuedUpload.findMany({
      where: { storeInstance, shareId: null, createdAt: { gt: cutoff } },
      select: { pathname: true },
    })
    return new Set(rows.map((r) => r.pathname))
  }

  /** Unshared permissions older than `cutoff` (orphans): their reservations are to be released. */
  async staleIssuedUploads(cutoff: Date, limit = 1000): Promise<IssuedUploadRecord[]> {
    const rows = await this.db.issuedUpload.findMany({
      where: { shareId: null, createdAt: { lte: cutoff } },
      orderBy: { createdAt: 'asc' },
      take: limit,
    })
    return rows.map(toIssued)
  }

  /**
   * Unshared permissions issued before `cutoff` whose body never began to arrive through this
   * server: candidates to give their reservation back (if nothing is stored either).
   */
  async unusedIssuedUploads(
    cutoff: Date,
    filter: { clientKey?: string; storeInstance?: string } = {},
    limit = 200,
  ): Promise<IssuedUploadRecord[]> {
    const rows = await this.db.issuedUpload.findMany({
      where: { shareId: null, uploadStartedAt: null, createdAt: { lte: cutoff }, ...filter },
      orderBy: { createdAt: 'asc' },
      take: limit,
    })
    return rows.map(toIssued)
  }

  /** The oldest reservation of a client (or of everyone) that may be released unused: when and where. */
  async oldestUnusedIssued(clientKey: string | null): Promise<{ createdAt: Date; store: string } | null> {
    const row = await this.db.issuedUpload.findFirst({
      where: { shareId: null, uploadStartedAt: null, ...(clientKey === null ? {} : { clientKey }) },
      orderBy: { createdAt: 'asc' },
      select: { createdAt: true, store: true },
    })
    return row ?? null
  }

  /**
   * Deletes a permission that is still unshared (and, with `unstarted`, never began to upload):
   * true for the one caller that deleted it, who then releases its bytes, once.
   */
  async deleteIssuedUploadIfUnshared(id: string, options: { unstarted?: boolean } = {}): Promise<boolean> {
    const { count } = await this.db.issuedUpload.deleteMany({
      where: { id, shareId: null, ...(options.unstarted ? { uploadStartedAt: null } : {}) },
    })
    return count === 1
  }

  /**
   * Marks that a permission's body began to arrive (blob, repo): from now on its reservation is
   * not given back at expiry. false when the permission is gone (released as unused).
   */
  async markUploadStarted(storeInstance: string, pathname: string, at: Date): Promise<boolean> {
    // Shared ones too: a second upload to a shared pathname is refused by the store (409).
    const { count } = await this.db.issuedUpload.updateMany({
      where: { storeInstance, pathname },
      data: { uploadStartedAt: at },
    })
    return count === 1
  }

  /**
   * A tus upload was created for this permission: in use from now on (not released at the
   * permission's expiry), resumable until `until`. Only once per permission, and only while it is
   * unused and unshared: false otherwise (one permission, one upload).
   */
  async markResumableStarted(
    storeInstance: string,
    pathname: string,
    at: Date,
    until: Date,
  ): Promise<boolean> {
    const { count } = await this.db.issuedUpload.updateMany({
      where: { storeInstance, pathname, shareId: null, uploadStartedAt: null },
      data: { uploadStartedAt: at, resumableUntil: until },
    })
    return count === 1
  }

  /** A tus creation the store failed: the permission is unused again. */
  async clearResumableStart(storeInstance: string, pathname: string): Promise<void> {
    await this.db.issuedUpload.updateMany({
      where: { storeInstance, pathname, shareId: null, resumableUntil: { not: null } },
      data: { uploadStartedAt: null, resumableUntil: null },
    })
  }

  /** Unshared tus uploads whose time to resume has passed (finished or not: the caller checks the store). */
  async expiredResumableUploads(now: Date, limit = 200): Promise<IssuedUploadRecord[]> {
    const rows = await this.db.issuedUpload.findMany({
      where: { shareId: null, resumableUntil: { lte: now } },
      orderBy: { resumableUntil: 'asc' },
      take: limit,
    })
    return rows.map(toIssued)
  }

  /** A finished tus upload stays until shared or orphaned: it no longer expires as a tus upload. */
  async clearResumable(id: string): Promise<void> {
    await this.db.issuedUpload.updateMany({ where: { id }, data: { resumableUntil: null } })
  }

  /**
   * A permission granted for up to `from` bytes whose file arrived with `to` bytes (a Vercel
   * client upload declares no size): the permission becomes one for exactly `to`. True for the
   * one caller that changed it, who then gives the difference back.
   */
  async shrinkIssuedUpload(id: string, from: number, to: number): Promise<boolean> {
    const { count } = await this.db.issuedUpload.updateMany({
      where: { id, shareId: null, size: BigInt(from) },
      data: { size: BigInt(to) },
    })
    return count === 1
  }

  /** The upload failed and stored nothing: the permission may expire unused again. */
  async clearUploadStarted(storeInstance: string, pathname: string, at: Date): Promise<void> {
    await this.db.issuedUpload.updateMany({
      where: { storeInstance, pathname, shareId: null, uploadStartedAt: at },
      data: { uploadStartedAt: null },
    })
  }

  /** The permission behind a pathname of one storage kind (pathnames are random and unique). */
  async issuedByPathname(store: string, pathname: string): Promise<IssuedUploadRecord | null> {
    const row = await this.db.issuedUpload.findFirst({ where: { store, pathname } })
    return row ? toIssued(row) : null
  }
}
