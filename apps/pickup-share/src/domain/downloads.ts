import { createHash, randomUUID } from 'node:crypto'
import type { Clock } from '@quartet/core/clock'
import { ApiError } from '@quartet/core/errors'
import type { TransferKey, TransfersPort } from './ports.ts'
import type { DownloadGate, Reservation } from './download-gate.ts'
import type { ByteRange } from './storage.ts'

/**
 * What a `Range` header asks of a file of `size` bytes (RFC 9110 §14): `null` for the whole
 * file (no header, one we do not understand, or several ranges — a server may ignore Range and
 * answer 200), a range, or `unsatisfiable` (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (header === undefined) return null
  const m = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header)
  if (!m || (m[1] === '' && m[2] === '')) return null
  if (m[1] === '') {
    // A suffix: the last n bytes.
    const n = Number(m[2])
    if (!Number.isSafeInteger(n)) return null
    if (n === 0 || size === 0) return 'unsatisfiable'
    return { start: Math.max(0, size - n), end: size - 1 }
  }
  const start = Number(m[1])
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end + 1)) return null
  if (m[2] !== '' && Number(m[2]) < start) return null // invalid: ignored
  if (start >= size) return 'unsatisfiable'
  return { start, end }
}

/**
 * A strong ETag of a share's file. Objects are never overwritten (permissions are create-only)
 * and their pathnames hold 128 random bits, so instance + pathname + size names the bytes.
 */
export function strongEtag(file: { storeInstance: string; pathname: string; size: number }): string {
  const h = createHash('sha256').update(`${file.storeInstance}\n${file.pathname}\n${file.size}`)
  return `"${h.digest('base64url').slice(0, 27)}"`
}

/**
 * `If-Range`: the range is served only when the validator is our strong ETag (a date, a weak or
 * another tag means the client's partial copy may be of other bytes: the whole file, 200).
 */
export const ifRangeAllows = (ifRange: string | undefined, etag: string): boolean =>
  ifRange === undefined || ifRange.trim() === etag

export interface ResumeRule {
  /** How long after its first request a transfer takes more requests (resumes) for free. */
  windowMs: number
  /** The most a transfer's budget holds beyond twice the file's size, see transferBudget. */
  slackBytes: number
}

/**
 * The bytes one transfer (one download) of a `size`-byte file may send, to its receiver, within
 * its window (README "Downloads: what one download buys"): twice the file, plus the file once
 * more up to `slackBytes` — 3 × size up to 16 MiB by default, 2 × size + 16 MiB above.
 */
export function transferBudget(size: number, slackBytes: number): number {
  return 2 * size + Math.min(size, slackBytes)
}

/**
 * The bytes a request draws from its transfer's room at a time, as they go out: what is drawn
 * and not sent goes back when the request ends. Files up to this size are drawn whole at once.
 */
export const LEASE_BYTES = 4 * 1024 * 1024

/** A request let through: its bytes are drawn from a transfer (opened by it, or joined). */
export interface Admission {
  transferId: string
  /** This request opened the transfer and spent a download. */
  opened: boolean
  /** The download gate's bookkeeping (in-flight stream; the spent download when opened). */
  reservation: Reservation
  /** The bytes the request asks for. */
  bytes: number
  /** Bytes drawn from the transfer's room so far, and bytes sent of them. */
  leased: number
  sent: number
}

/** The transfer's budget is spent: the response is cut where it is (the receiver may resume later). */
export class BudgetSpent extends Error {
  constructor() {
    super("this download's byte budget is spent")
  }
}

/** Another request of the same receiver holds an opening at most this long before it is stale. */
const OPENING_STALE_MS = 30_000
const ABANDON_RETRY_MS = 500
/** The global timer, which a test's fake clock drives (node:timers/promises' is not). */
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
/**
 * How long a request waits, from its arrival, for other requests of its receiver and file: for
 * those ahead of it in this process (its turn), then for an opening another request holds. Past
 * it, 503 with Retry-After. One deadline for both, so a request behind a stalling one is not held
 * for its turn and then again for an opening (an opening whose opener failed, with its delete
 * failing too while the database stalls, is waited for until it is stale: 30 s).
 *
 * Except while the turns ahead keep completing: a download manager's eight parallel requests on a
 * busy server queue for longer than this without anything being wrong, and a stock client
 * (aria2c, a browser) does not retry a 503. So the wait is judged by the queue's progress: a
 * request gives up when no turn ahead of it has completed for WAIT_MS (the database stalls), and
 * in any case after MAX_TURN_WAIT_MS.
 */
const WAIT_MS = 2_000
/** The longest a request waits for its turn while the turns ahead keep completing. */
const MAX_TURN_WAIT_MS = 30_000

/** The requests of one receiver for one file in this process: the last in line, and the queue's progress. */
interface TurnQueue {
  tail: Promise<unknown>
  /** When a turn last completed with the database's answer (Date.now); 0 before any. */
  lastCompletedAt: number
}

/**
 * Resolves when `before` settles, with the deadline of the request's wait for an opening (WAIT_MS
 * after its arrival, or after the last turn completed when that is later); rejects with 503 once
 * no turn ahead has completed for WAIT_MS, or MAX_TURN_WAIT_MS after its arrival.
 */
function withinTurnWait(before: Promise<unknown>, queue: TurnQueue, arrived: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const now = Date.now()
      const quietFor = now - queue.lastCompletedAt
      if (quietFor < WAIT_MS && now - arrived < MAX_TURN_WAIT_MS) {
        timer = setTimeout(check, WAIT_MS - quietFor)
        return
      }
      reject(
        new ApiError(
          'service_unavailable',
          'earlier requests for this download are still starting; try again',
          undefined,
          {
            headers: { 'Retry-After': '1' },
          },
        ),
      )
    }
    let timer = setTimeout(check, WAIT_MS)
    const done = () => {
      clearTimeout(timer)
      resolve(Math.max(arrived, queue.lastCompletedAt) + WAIT_MS)
    }
    before.then(done, done)
  })
}

/**
 * The counting rule of downloads (README "Downloads: what one download buys"). A transfer
 * belongs to one file (or the archive) of one share and one receiver (the client's address as
 * limits count it). The first request of a transfer spends one download (the gate's atomic
 * reservation); every request of that receiver for that file until the window ends joins it
 * for free while the bytes it asks for fit in what is left of the transfer's budget. Nothing
 * closes a transfer earlier (what the server handed to a socket says nothing of what the client
 * got). A request's bytes are drawn from the room as they go out (take), so a whole-file GET
 * still running does not hold the room its download manager's ranges need; what was drawn and
 * not sent goes back at the end. A request that does not fit opens a new transfer, which spends
 * another download (none left: 410).
 */
export class DownloadTransfers {
  /** Admissions under way in this process, per receiver and file: they take turns. */
  private readonly turns = new Map<string, TurnQueue>()

  constructor(
    private readonly d: {
      repo: TransfersPort
      gate: DownloadGate
      clock: Clock
      rule: ResumeRule
    },
  ) {}

  /**
   * Lets a request for `bytes` of a `size`-byte file through, or null when no download is left.
   * Requests of one receiver for one file take turns in this process (a download manager's
   * parallel first requests then open one transfer and join it without asking Postgres in a
   * loop); across processes the opening row decides, and the others wait for it.
   */
  async admit(
    share: { id: string; expiresAt: Date },
    key: TransferKey,
    size: number,
    bytes: number,
  ): Promise<Admission | null> {
    const id = `${key.shareId}\n${key.path}\n${key.receiver}`
    let queue = this.turns.get(id)
    if (!queue) this.turns.set(id, (queue = { tail: Promise.resolve(), lastCompletedAt: 0 }))
    const q = queue
    // A turn is waited for while the turns ahead keep completing: when they stall (a database
    // that stopped answering), the queue would otherwise grow without bound and hold each request
    // for the sum of theirs. Then 503 at once; the opening row still decides across processes.
    const mine = withinTurnWait(q.tail, q, Date.now())
      .then((waitUntil) => this.admitNow(share, key, size, bytes, waitUntil))
      .then((admission) => {
        q.lastCompletedAt = Date.now()
        return admission
      })
    const settled = mine.catch(() => {})
    q.tail = settled
    void settled.then(() => {
      if (q.tail === settled) this.turns.delete(id)
    })
    return mine
  }

  private async admitNow(
    share: { id: string; expiresAt: Date },
    key: TransferKey,
    size: number,
    bytes: number,
    waitUntil: number,
  ): Promise<Admission | null> {
    const lease = Math.min(bytes, LEASE_BYTES)
    const join = async (now: Date): Promise<Admission | null> => {
      const joined = await this.d.repo.join(key, bytes, lease, now)
      if (!joined) return null
      const reservation = await this.d.gate.enter(share.id, share.expiresAt)
      return { transferId: joined, opened: false, reservation, bytes, leased: lease, sent: 0 }
    }
    for (let wait = 50; ; wait = Math.min(wait * 2, 400)) {
      const now = this.d.clock.now()
      const joined = await join(now)
      if (joined) return joined
      const id = randomUUID()
      const budget = transferBudget(size, this.d.rule.slackBytes)
      const expiresAt = new Date(Math.min(now.getTime() + this.d.rule.windowMs, share.expiresAt.getTime()))
      const stale = new Date(now.getTime() - OPENING_STALE_MS)
      const opening = await this.d.repo.beginOpening(id, key, budget, now, expiresAt, stale)
      if (opening === 'gone') return null
      if (opening === 'opened') {
        let reservation: Reservation | null
        try {
          // The download and the payment of this opening are one transaction (ShareRepository
          // decrementRemaining): a failure leaves both undone, or — a commit whose answer was
          // lost — both done, and the receiver's retry joins the paid transfer.
          reservation = await this.d.gate.reserve(share.id, share.expiresAt, { transferId: id })
        } catch (err) {
          this.abandon(id)
          throw err
        }
        if (!reservation) {
          this.abandon(id)
          // The share's downloads are spent. The last one may have been spent by another request
          // of this receiver whose opening was paid between this request's join and its own
          // opening (the unique index only holds unpaid openings): then this one joins it.
          return join(now)
        }
        let mine: boolean
        try {
          mine = await this.d.repo.reserveIn(id, bytes, lease, now)
        } catch (err) {
          // Paid, with its whole budget: the receiver's retry joins it.
          void this.d.gate.finish(share.id, reservation).catch(() => {})
          throw err
        }
        if (!mine) {
          // Requests of this receiver on another replica took the paid room first (each a whole
          // file): this one needs a transfer of its own, as if it had come after them.
          void this.d.gate.finish(share.id, reservation).catch(() => {})
          continue
        }
        return { transferId: id, opened: true, reservation, bytes, leased: lease, sent: 0 }
      }
      // Another request of this receiver holds an opening (in another process, or one of this
      // process's whose opener failed and whose delete is being retried): wait until it is paid
      // and join it, or gone and open one, until the request's deadline.
      if (Date.now() >= waitUntil)
        throw new ApiError(
          'service_unavailable',
          'another request is starting this download; try again',
          undefined,
          {
            headers: { 'Retry-After': '1' },
          },
        )
      await sleep(Math.min(wait, waitUntil - Date.now()))
    }
  }

  /**
   * Removes an opening that will never be paid. It blocks the receiver's next requests until it
   * is gone (or stale after OPENING_STALE_MS), so when the database fails the delete too (the
   * failure that ended the opening), it is retried every half second until it is done. Only an
   * unpaid opening is removed: one whose payment committed although its caller saw a failure is
   * a transfer the receiver's retry joins.
   */
  private abandon(id: string): void {
    let tries = 0
    const attempt = () => {
      this.d.repo.deleteUnpaid(id).catch(() => {
        if (++tries < OPENING_STALE_MS / ABANDON_RETRY_MS) setTimeout(attempt, ABANDON_RETRY_MS).unref()
      })
    }
    attempt()
  }

  /**
   * Before `n` more bytes of the request go out: they are drawn from the lease, and a new lease
   * is drawn from the transfer's room when it runs short (undefined when none was needed, so
   * most chunks cost no promise). Rejects with BudgetSpent when the room cannot hold them:
   * parallel requests of this receiver together asked for more than the budget.
   */
  take(a: Admission, n: number): Promise<void> | undefined {
    if (a.leased - a.sent >= n) {
      a.sent += n
      return undefined
    }
    return (async () => {
      const short = n - (a.leased - a.sent)
      const want = Math.min(a.bytes - a.leased, Math.max(LEASE_BYTES, short))
      a.leased += want > 0 ? await this.d.repo.lease(a.transferId, want) : 0
      if (a.leased - a.sent < n) throw new BudgetSpent()
      a.sent += n
    })()
  }

  /** The store failed before the first byte (or nothing went out): nothing is spent. */
  async refund(shareId: string, a: Admission): Promise<void> {
    if (a.opened) {
      await this.d.gate.refund(shareId, a.reservation)
      await this.d.repo.delete(a.transferId)
    } else {
      await this.d.repo.finish(a.transferId, a.leased, 0)
      await this.d.gate.finish(shareId, a.reservation)
    }
  }

  /**
   * A request that opened its transfer and sent nothing (the client left before the first byte):
   * the download is given back, unless another request of the receiver drew from the transfer
   * meanwhile (then it stays spent: false). The opening goes first, in one conditional statement,
   * so a download is never given back twice.
   */
  async giveBackUnsent(shareId: string, a: Admission): Promise<boolean> {
    if (!a.opened || !(await this.d.repo.deleteUntouched(a.transferId, a.leased))) return false
    await this.d.gate.refund(shareId, a.reservation)
    return true
  }

  /**
   * A request ended having sent `written` of its bytes: what it drew and did not send is room
   * again. True when it was the last stream of a share with no downloads left and no transfer
   * that may still come back: the share can go.
   */
  async finish(share: { id: string }, a: Admission, written: number): Promise<boolean> {
    await this.d.repo.finish(a.transferId, a.leased, Math.min(written, a.sent))
    if (!(await this.d.gate.finish(share.id, a.reservation))) return false
    return (await this.d.repo.liveOfShare(share.id, this.d.clock.now())) === 0
  }

  /** Whether the receiver may still come back to a share with no downloads left. */
  hasLive(key: TransferKey): Promise<boolean> {
    const now = this.d.clock.now()
    return this.d.repo.hasLive(key, now, new Date(now.getTime() - OPENING_STALE_MS))
  }
}
