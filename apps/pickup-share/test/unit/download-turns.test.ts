import { systemClock } from '@quartet/core/clock'
import { ApiError, dependencyFailure } from '@quartet/core/errors'
import type { DownloadGate } from '../../src/domain/download-gate.ts'
import { DownloadTransfers } from '../../src/domain/downloads.ts'
import type { TransferRepository } from '../../src/store/transfer-repository.ts'

describe('requests of one receiver for one file, taking turns in this process', () => {
  it('when the request ahead is stuck on a stalling database, then the ones behind answer 503 with Retry-After within about two seconds, not after it', async () => {
    let release: () => void = () => {}
    const stalled = new Promise<void>((resolve) => (release = resolve))
    // The first lookup stalls (a frozen database); nothing is ever joined or opened here.
    let calls = 0
    const repo = {
      join: async () => {
        if (calls++ === 0) await stalled
        throw new Error('Query read timeout')
      },
    } as unknown as TransferRepository
    const transfers = new DownloadTransfers({
      repo,
      gate: {} as DownloadGate,
      clock: systemClock,
      rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
    })
    const share = { id: 's1', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's1', path: 'a/f.bin', receiver: '198.51.100.20' }
    const first = transfers.admit(share, key, 100, 100).catch((e: unknown) => e)
    const started = performance.now()
    const behind = await Promise.all(
      Array.from({ length: 3 }, () => transfers.admit(share, key, 100, 100).catch((e: unknown) => e)),
    )
    const waited = performance.now() - started
    release()
    expect(waited).toBeLessThan(4000)
    // Each is a 503: its own turn's wait ran out, or its turn came and the database failed it fast.
    for (const err of behind)
      expect(err instanceof ApiError ? err.code : dependencyFailure(err)).toMatch(/^(service_)?unavailable$/)
    expect(behind[0]).toMatchObject({ code: 'service_unavailable', status: 503 })
    expect(await first).toMatchObject({ message: 'Query read timeout' })
  })

  it('when an opening fails with the database and its own delete fails too, then the delete is retried until the database answers, so the receiver is not blocked', async () => {
    let deletes = 0
    const deleted: string[] = []
    const repo = {
      join: async () => null,
      beginOpening: async () => 'opened',
      deleteUnpaid: async (id: string) => {
        if (++deletes <= 2) throw new Error('Connection terminated unexpectedly')
        deleted.push(id)
      },
    } as unknown as TransferRepository
    const gate = {
      reserve: async () => {
        throw new Error('Connection terminated unexpectedly')
      },
    } as unknown as DownloadGate
    const transfers = new DownloadTransfers({
      repo,
      gate,
      clock: systemClock,
      rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
    })
    const share = { id: 's2', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's2', path: 'a/g.bin', receiver: '198.51.100.21' }
    await expect(transfers.admit(share, key, 100, 100)).rejects.toThrow('Connection terminated')
    const deadline = Date.now() + 5_000
    while (deleted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(deletes).toBe(3)
    expect(deleted).toHaveLength(1)
  })

  it('when another request of the receiver pays its opening between this request’s join and its own opening, then this one joins that transfer instead of a 410 (used up)', async () => {
    // The interleaving: join finds no paid transfer; the other request's opening is paid; the
    // unique index then lets this request open its own, whose payment finds the share used up.
    const joins: string[] = []
    const deleted: string[] = []
    let paidElsewhere = false
    const repo = {
      join: async () => {
        joins.push(paidElsewhere ? 'paid' : 'none')
        return paidElsewhere ? 'their-transfer' : null
      },
      beginOpening: async () => {
        paidElsewhere = true
        return 'opened'
      },
      deleteUnpaid: async (id: string) => {
        deleted.push(id)
      },
    } as unknown as TransferRepository
    const gate = {
      reserve: async () => null,
      enter: async () => ({ kind: 'joined' }),
    } as unknown as DownloadGate
    const transfers = new DownloadTransfers({
      repo,
      gate,
      clock: systemClock,
      rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
    })
    const share = { id: 's3', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's3', path: 'a/h.bin', receiver: '198.51.100.22' }
    const admission = await transfers.admit(share, key, 100, 100)
    expect(admission).toMatchObject({ transferId: 'their-transfer', opened: false, bytes: 100 })
    expect(joins).toEqual(['none', 'paid'])
    // The opening this request made is removed (abandon runs beside the answer).
    const deadline = Date.now() + 2_000
    while (deleted.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    expect(deleted).toHaveLength(1)
  })

  it('when the share is used up and the receiver has no paid transfer, then admit answers null (410)', async () => {
    const repo = {
      join: async () => null,
      beginOpening: async () => 'opened',
      deleteUnpaid: async () => {},
    } as unknown as TransferRepository
    const transfers = new DownloadTransfers({
      repo,
      gate: { reserve: async () => null } as unknown as DownloadGate,
      clock: systemClock,
      rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
    })
    const share = { id: 's4', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's4', path: 'a/i.bin', receiver: '198.51.100.23' }
    expect(await transfers.admit(share, key, 100, 100)).toBeNull()
  })

  describe('a busy database: every turn is answered, slowly', () => {
    // Each lookup is answered after `ms` and joins the receiver's paid transfer, as on a loaded
    // server where a download manager's parallel requests queue behind one another.
    const slowButAnswering = (ms: number) =>
      new DownloadTransfers({
        repo: {
          join: () => new Promise((resolve) => setTimeout(() => resolve('paid-transfer'), ms)),
        } as unknown as TransferRepository,
        gate: { enter: async () => ({ kind: 'joined' }) } as unknown as DownloadGate,
        clock: systemClock,
        rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
      })
    const share = { id: 's6', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's6', path: 'a/k.bin', receiver: '198.51.100.25' }

    beforeEach(() => jest.useFakeTimers())
    afterEach(() => jest.useRealTimers())

    it('when eight requests queue behind turns of 700 ms each, then each is admitted, the last after 5.6 s: the queue kept moving, so nobody gets a 503', async () => {
      const transfers = slowButAnswering(700)
      const outcomes: unknown[] = []
      const all = Array.from({ length: 8 }, () =>
        transfers.admit(share, key, 100, 100).then(
          (v) => outcomes.push(v),
          (e: unknown) => outcomes.push(e),
        ),
      )
      await jest.advanceTimersByTimeAsync(5_700)
      await Promise.all(all)
      expect(outcomes).toHaveLength(8)
      for (const o of outcomes) expect(o).toMatchObject({ transferId: 'paid-transfer', opened: false })
    })

    it('when the queue keeps moving but a request has waited 30 s, then it answers 503 with Retry-After', async () => {
      const transfers = slowButAnswering(1_500)
      const outcomes: Array<{ at: number; status: number }> = []
      const started = Date.now()
      const all = Array.from({ length: 30 }, () =>
        transfers.admit(share, key, 100, 100).then(
          () => outcomes.push({ at: Date.now() - started, status: 200 }),
          (e: unknown) => outcomes.push({ at: Date.now() - started, status: (e as ApiError).status }),
        ),
      )
      await jest.advanceTimersByTimeAsync(40_000)
      await Promise.all(all)
      const admitted = outcomes.filter((o) => o.status === 200)
      const refused = outcomes.filter((o) => o.status === 503)
      expect(admitted.length + refused.length).toBe(30)
      // Twenty turns of 1.5 s fit in 30 s; the rest give up at 30 s (within one WAIT_MS).
      expect(admitted.length).toBeGreaterThanOrEqual(19)
      expect(refused.length).toBeGreaterThan(0)
      for (const o of refused) expect(o.at).toBeGreaterThanOrEqual(30_000)
      for (const o of refused) expect(o.at).toBeLessThan(32_100)
    })
  })

  describe('an opening another request holds and never pays (its opener failed, and the database still fails its delete)', () => {
    // join finds no paid transfer and the opening row stands: the request can only wait or 503.
    const neverPaid = () =>
      new DownloadTransfers({
        repo: { join: async () => null, beginOpening: async () => 'busy' } as unknown as TransferRepository,
        gate: {} as DownloadGate,
        clock: systemClock,
        rule: { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 },
      })
    const share = { id: 's5', expiresAt: new Date(Date.now() + 3_600_000) }
    const key = { shareId: 's5', path: 'a/j.bin', receiver: '198.51.100.24' }
    /** The outcome once it settles, or 'pending'. */
    const watch = (p: Promise<unknown>) => {
      let outcome: unknown = 'pending'
      p.then(
        (v) => (outcome = v),
        (e: unknown) => (outcome = e),
      )
      return () => outcome
    }

    beforeEach(() => jest.useFakeTimers())
    afterEach(() => jest.useRealTimers())

    it('when a request waits for it, then it answers 503 with Retry-After two seconds after it arrived, not five', async () => {
      const outcome = watch(neverPaid().admit(share, key, 100, 100))
      await jest.advanceTimersByTimeAsync(1_900)
      expect(outcome()).toBe('pending')
      await jest.advanceTimersByTimeAsync(200)
      expect(outcome()).toMatchObject({ code: 'service_unavailable', status: 503 })
      expect((outcome() as ApiError).headers).toMatchObject({ 'Retry-After': '1' })
    })

    it('when a request waited for its turn first, then its wait for the opening ends at the same deadline, two seconds after it arrived', async () => {
      const transfers = neverPaid()
      const first = watch(transfers.admit(share, key, 100, 100))
      await jest.advanceTimersByTimeAsync(1_000)
      // Its turn comes when the first gives up, at 2 s; its own deadline is at 3 s, not 4.
      const second = watch(transfers.admit(share, key, 100, 100))
      await jest.advanceTimersByTimeAsync(1_100)
      expect(first()).toMatchObject({ status: 503 })
      expect(second()).toBe('pending')
      await jest.advanceTimersByTimeAsync(1_000)
      expect(second()).toMatchObject({ code: 'service_unavailable', status: 503 })
    })
  })
})
