import { ApiError } from '@quartet/core/errors'
import { Prisma } from '../generated/prisma/client.ts'
import type {
  CreateShareResult,
  DownloadCountPort,
  NewShare,
  ShareEnd,
  ShareListQuery,
  ShareLookup,
  ShareRecord,
  SharesPort,
  TransferPayment,
} from '../domain/ports.ts'
import type { Db } from './db.ts'

const shareInclude = { files: { orderBy: { position: 'asc' } } } as const

type ShareRow = Prisma.ShareGetPayload<{ include: typeof shareInclude }>

function toShare(row: ShareRow): ShareRecord {
  return {
    id: row.id,
    code: row.code,
    maxDownloads: row.maxDownloads,
    remaining: row.remaining,
    limitSize: row.limitSize,
    passwordHash: row.passwordHash,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    exhaustedAt: row.exhaustedAt,
    files: row.files.map((f) => ({
      name: f.name,
      size: Number(f.size),
      type: f.type,
      pathname: f.pathname,
      store: f.store,
      storeInstance: f.storeInstance,
    })),
  }
}

/**
 * The share a read found, or null when it was removed while it was read. Prisma reads a share
 * and its files in two statements, each seeing what was committed when it began: a removal that
 * commits between them leaves the share without files. A share always has a file (POST
 * /api/share asks for one at least) and its files go only with it (cascade), so that share is
 * gone — and its ended_share row, written in the removal's transaction, is there to be read.
 */
function readShare(row: ShareRow | null): ShareRecord | null {
  return row && row.files.length > 0 ? toShare(row) : null
}

/** Shares, their files, their download counts and the ended shares they leave. */
export class ShareRepository implements SharesPort, DownloadCountPort {
  constructor(private readonly db: Db) {}

  /**
   * Claims every issued upload (one conditional UPDATE: only uploads not yet in a share), then
   * consumes the authorization code (one conditional UPDATE: unused, unrevoked, unexpired), then
   * inserts the share and its files. Each step that decides something is a single atomic
   * statement, so racing requests get exactly one winner; a refusal undoes the steps before it.
   * (No interactive transaction: the embedded dev/test Postgres serialises those badly under load.)
   */
  async create(s: NewShare, nextCode: () => string): Promise<CreateShareResult> {
    const ids = s.files.map((f) => f.issuedUploadId)
    const claimed = await this.db.issuedUpload.updateMany({
      where: { id: { in: ids }, shareId: null },
      data: { shareId: s.id },
    })
    const releaseUploads = () =>
      this.db.issuedUpload.updateMany({ where: { id: { in: ids }, shareId: s.id }, data: { shareId: null } })
    if (claimed.count !== ids.length) {
      await releaseUploads()
      return { ok: false, reason: 'upload_already_shared' }
    }
    let authCodeId: string | null = null
    if (s.authCode) {
      const used = await this.db.authCode.updateMany({
        where: {
          codeHash: s.authCode.hash,
          usedAt: null,
          revokedAt: null,
          expiresAt: { gt: s.authCode.now },
        },
        data: { usedAt: s.authCode.now, usedByShareId: s.id },
      })
      if (used.count !== 1) {
        await releaseUploads()
        return { ok: false, reason: 'auth_code_unusable' }
      }
      authCodeId = (await this.db.authCode.findUniqueOrThrow({ where: { codeHash: s.authCode.hash } })).id
    }
    try {
      let code = s.code
      for (let attempt = 0; ; attempt++) {
        try {
          await this.db.share.create({
            data: {
              id: s.id,
              code,
              linkTokenHash: s.linkTokenHash,
              maxDownloads: s.maxDownloads,
              remaining: s.maxDownloads,
              limitSize: s.limitSize,
              passwordHash: s.passwordHash,
              authCodeId,
              createdAt: s.createdAt,
              expiresAt: s.expiresAt,
            },
          })
          break
        } catch (err) {
          const taken = err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002'
          if (!taken || attempt >= 7) throw err
          code = nextCode()
        }
      }
      await this.db.shareFile.createMany({
        data: s.files.map((f, position) => ({
          id: `${s.id}-${position}`,
          shareId: s.id,
          position,
          name: f.name,
          size: BigInt(f.size),
          type: f.type,
          pathname: f.pathname,
          store: f.store,
          storeInstance: f.storeInstance,
        })),
      })
      if (authCodeId)
        await this.db.authCode.update({ where: { id: authCodeId }, data: { usedByShareCode: code } })
      return { ok: true, share: (await this.findById(s.id))! }
    } catch (err) {
      await this.db.share.deleteMany({ where: { id: s.id } })
      await releaseUploads()
      if (authCodeId)
        await this.db.authCode.updateMany({
          where: { id: authCodeId, usedByShareId: s.id },
          data: { usedAt: null, usedByShareId: null },
        })
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002')
        return { ok: false, reason: 'upload_already_shared' }
      throw err
    }
  }

  /** A share that can still be taken: not expired, not exhausted. */
  async findLiveByCode(code: string, now: Date): Promise<ShareRecord | null> {
    const row = await this.db.share.findFirst({
      where: { code, expiresAt: { gt: now }, exhaustedAt: null },
      include: shareInclude,
    })
    return readShare(row)
  }

  /** The live share a pickup link's token opens. */
  async findLiveByLinkToken(tokenHash: string, now: Date): Promise<ShareRecord | null> {
    const row = await this.db.share.findFirst({
      where: { linkTokenHash: tokenHash, expiresAt: { gt: now }, exhaustedAt: null },
      include: shareInclude,
    })
    return readShare(row)
  }

  /**
   * A share a download may name: not expired; possibly exhausted (a receiver whose transfer is
   * still open may come back to it, README "Downloads: what one download buys").
   */
  async findDownloadableByCode(code: string, now: Date): Promise<ShareRecord | null> {
    const row = await this.db.share.findFirst({
      where: { code, expiresAt: { gt: now } },
      include: shareInclude,
    })
    return readShare(row)
  }

  async findDownloadableByLinkToken(tokenHash: string, now: Date): Promise<ShareRecord | null> {
    const row = await this.db.share.findFirst({
      where: { linkTokenHash: tokenHash, expiresAt: { gt: now } },
      include: shareInclude,
    })
    return readShare(row)
  }

  async findByCode(code: string): Promise<ShareRecord | null> {
    const row = await this.db.share.findUnique({ where: { code }, include: shareInclude })
    return readShare(row)
  }

  async findById(id: string): Promise<ShareRecord | null> {
    const row = await this.db.share.findUnique({ where: { id }, include: shareInclude })
    return readShare(row)
  }

  /** Durable downloads left of a live counted share; null when it is gone, expired or exhausted. */
  async remainingOf(id: string, now: Date): Promise<number | null> {
    const row = await this.db.share.findFirst({
      where: { id, expiresAt: { gt: now }, exhaustedAt: null },
      select: { remaining: true },
    })
    return row?.remaining ?? null
  }

  /**
   * The durable half of a reservation: one conditional UPDATE, so Postgres alone never lets
   * more downloads through than the share allows. Returns the downloads left, or null.
   */
  /**
   * Spends one download: the downloads left after it, or null when none was left. With `pay`, the
   * transfer being opened is marked paid in the same transaction, so the download and the
   * transfer it paid for exist together or not at all — also when the database fails or a
   * commit's answer is lost: then the receiver's retry joins a paid transfer with its whole
   * budget, and there is never an unpaid opening whose download must be given back.
   */
  async decrementRemaining(id: string, now: Date, pay?: TransferPayment): Promise<number | null> {
    // One transaction: a database that stops between its steps must not keep a decrement whose
    // caller then answers 503 (a download spent and never delivered).
    return this.db.$transaction(async (tx) => {
      // A conditional UPDATE: row-locked and re-checked, so concurrent decrements never pass zero.
      const { count } = await tx.share.updateMany({
        where: { id, remaining: { gt: 0 }, exhaustedAt: null, expiresAt: { gt: now } },
        data: { remaining: { decrement: 1 } },
      })
      if (count !== 1) return null
      if (pay) {
        const paid = await tx.downloadTransfer.updateMany({
          where: { id: pay.transferId, paid: false },
          data: { paid: true },
        })
        // The opening is gone (removed as stale): nothing to pay for, so nothing is spent.
        if (paid.count !== 1)
          throw new ApiError(
            'service_unavailable',
            'this download was started again meanwhile; try again',
            undefined,
            {
              headers: { 'Retry-After': '1' },
            },
          )
      }
      // Whoever sees zero marks the share exhausted (idempotent); take also treats 0 as used up.
      await tx.share.updateMany({
        where: { id, remaining: 0, exhaustedAt: null },
        data: { exhaustedAt: now },
      })
      const row = await tx.share.findUnique({ where: { id }, select: { remaining: true } })
      return row?.remaining ?? 0
    })
  }

  async refund(id: string): Promise<void> {
    await this.db.share.updateMany({
      where: { id, remaining: { not: null } },
      data: { remaining: { increment: 1 }, exhaustedAt: null },
    })
  }

  /**
   * Deletes the share (files rows cascade) and its issued uploads; returns what was deleted.
   * With `ended`, a share that is used up or expired at `ended.now` leaves an ended_share row
   * until `ended.forgetAt`, in the same transaction (admin deletions leave none).
   */
  async delete(id: string, ended?: { now: Date; forgetAt: Date }): Promise<ShareRecord | null> {
    const row = await this.db.share.findUnique({ where: { id }, include: shareInclude })
    const share = readShare(row)
    if (!row || !share) return null
    const reason = ended ? endReason(share, ended.now) : null
    // Whoever deletes the row owns the clean-up; a concurrent caller sees count 0.
    const count = await this.db.$transaction(async (tx) => {
      const { count } = await tx.share.deleteMany({ where: { id } })
      if (count === 1 && reason && ended)
        await tx.endedShare.create({
          data: {
            shareId: id,
            code: row.code,
            linkTokenHash: row.linkTokenHash,
            reason,
            expiresAt: row.expiresAt,
            endedAt: ended.now,
            forgetAt: ended.forgetAt,
          },
        })
      return count
    })
    if (count === 0) return null
    await this.db.issuedUpload.deleteMany({ where: { shareId: id } })
    return share
  }

  /**
   * Why a code or a link opens nothing any more: its share is still there but used up or
   * expired, or it ended and was removed (ended_share, until forgotten). Null: no share had it.
   * A live share with the same code (codes are unique among live shares only) wins elsewhere.
   */
  async endOf(by: ShareLookup, now: Date): Promise<ShareEnd | null> {
    const rows = await this.db.share.findMany({ where: by, include: shareInclude, take: 1 })
    const share = readShare(rows[0] ?? null)
    if (share) {
      const reason = endReason(share, now)
      return reason ? { reason, expiresAt: share.expiresAt } : null
    }
    // The share is gone, so its removal had committed when the read above began: this later
    // statement sees the ended_share row that the removal wrote in the same transaction.
    const ended = await this.db.endedShare.findFirst({
      where: { ...by, forgetAt: { gt: now } },
      orderBy: { endedAt: 'desc' },
    })
    if (!ended) return null
    return { reason: ended.reason === 'expired' ? 'expired' : 'used_up', expiresAt: ended.expiresAt }
  }

  /** Forgets ended shares past their time; returns how many. */
  async forgetEnded(now: Date): Promise<number> {
    return (await this.db.endedShare.deleteMany({ where: { forgetAt: { lte: now } } })).count
  }

  /**
   * Shares to sweep: expired, or exhausted before `exhaustedBefore` (a lost finaliser) with no
   * transfer that may still be resumed.
   */
  async findEnded(now: Date, exhaustedBefore: Date, limit = 500): Promise<string[]> {
    const rows = await this.db.share.findMany({
      where: {
        OR: [
          { expiresAt: { lte: now } },
          {
            exhaustedAt: { lte: exhaustedBefore },
            transfers: { none: { expiresAt: { gt: now }, room: { gt: 0 } } },
          },
        ],
      },
      select: { id: true },
      take: limit,
    })
    return rows.map((r) => r.id)
  }

  async sharedPathnames(storeInstance: string): Promise<Set<string>> {
    const rows = await this.db.shareFile.findMany({ where: { storeInstance }, select: { pathname: true } })
    return new Set(rows.map((r) => r.pathname))
  }

  async list(
    query: ShareListQuery,
  ): Promise<{ items: Array<ShareRecord & { totalBytes: number }>; total: number }> {
    const where: Prisma.ShareWhereInput = {}
    if (query.q)
      where.OR = [
        { code: { startsWith: query.q } },
        { files: { some: { name: { contains: query.q, mode: 'insensitive' } } } },
      ]
    if (query.status === 'active') Object.assign(where, { expiresAt: { gt: query.now }, exhaustedAt: null })
    if (query.status === 'exhausted') where.exhaustedAt = { not: null }
    if (query.status === 'expired') where.expiresAt = { lte: query.now }
    const [rows, total] = await Promise.all([
      this.db.share.findMany({
        where,
        include: shareInclude,
        orderBy: [{ [query.sort]: query.order }, { id: 'asc' }],
        skip: (query.page - 1) * query.pageSize,
        take: query.pageSize,
      }),
      this.db.share.count({ where }),
    ])
    return {
      items: rows.map((r) => {
        const s = toShare(r)
        return { ...s, totalBytes: s.files.reduce((n, f) => n + f.size, 0) }
      }),
      total,
    }
  }
}

/** Why a share opens nothing any more at `now`, or null while it is live. Expiry wins. */
function endReason(share: ShareRecord, now: Date): 'used_up' | 'expired' | null {
  if (share.expiresAt.getTime() <= now.getTime()) return 'expired'
  if (share.remaining === 0 || share.exhaustedAt !== null) return 'used_up'
  return null
}
