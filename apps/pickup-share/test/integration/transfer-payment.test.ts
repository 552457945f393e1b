import { systemClock } from '@quartet/core/clock'
import { quoteIdent } from '@quartet/core/db'
import { DownloadGate } from '../../src/domain/download-gate.ts'
import { DownloadTransfers } from '../../src/domain/downloads.ts'
import { ShareRepository } from '../../src/store/share-repository.ts'
import { TransferRepository } from '../../src/store/transfer-repository.ts'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// The download a transfer opening spends and the payment of that opening are one transaction:
// whatever the database does, they exist together or not at all.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const rule = { windowMs: 86_400_000, slackBytes: 16 * 1024 * 1024 }

async function oneDownloadShare() {
  const data = Buffer.alloc(10_000, 3)
  const { file } = await uploadFile(h, { name: 'paid.bin', data })
  const made = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })
  expect(made.status).toBe(200)
  const schema = quoteIdent(deps.database.schema)
  const [row] = await deps.db.$queryRawUnsafe<Array<{ id: string; expires_at: Date }>>(
    `SELECT s.id, s.expires_at FROM ${schema}."share" s JOIN ${schema}."share_file" f ON f.share_id = s.id WHERE f.pathname = $1`,
    file.pathname,
  )
  const remaining = async () =>
    (
      await deps.db.$queryRawUnsafe<Array<{ remaining: number }>>(
        `SELECT remaining FROM ${schema}."share" WHERE id = $1`,
        row!.id,
      )
    )[0]!.remaining
  const transfers = async () =>
    deps.db.$queryRawUnsafe<Array<{ paid: boolean }>>(
      `SELECT paid FROM ${schema}."download_transfer" WHERE share_id = $1`,
      row!.id,
    )
  return {
    share: { id: row!.id, expiresAt: row!.expires_at },
    path: file.pathname,
    size: data.length,
    remaining,
    transfers,
  }
}

describe('paying for a transfer', () => {
  it('when the commit of a download and its payment went through but its answer was lost, then the retry joins the paid transfer and nothing is spent twice or given back', async () => {
    const s = await oneDownloadShare()
    const shares = new ShareRepository(deps.db)
    let lost = 0
    // The statement ran; the answer never arrived (a connection cut after COMMIT).
    const losing = Object.create(shares) as ShareRepository
    losing.decrementRemaining = async (...args) => {
      const after = await shares.decrementRemaining(...args)
      if (lost++ === 0) throw new Error('Connection terminated unexpectedly')
      return after
    }
    const transfers = new DownloadTransfers({
      repo: new TransferRepository(deps.db),
      gate: new DownloadGate(deps.kv, losing, systemClock),
      clock: systemClock,
      rule,
    })
    const key = { shareId: s.share.id, path: s.path, receiver: '203.0.113.40' }
    await expect(transfers.admit(s.share, key, s.size, s.size)).rejects.toThrow('Connection terminated')
    expect(await s.remaining()).toBe(0)
    // The opening was paid in that commit, so abandoning it after the failure left it in place.
    await new Promise((r) => setTimeout(r, 200))
    expect(await s.transfers()).toEqual([{ paid: true }])

    const retry = await transfers.admit(s.share, key, s.size, s.size)
    expect(retry).toMatchObject({ opened: false })
    expect(await s.remaining()).toBe(0)
    // Anyone else: nothing left.
    expect(await transfers.admit(s.share, { ...key, receiver: '203.0.113.41' }, s.size, s.size)).toBeNull()
  })

  it('when the transaction failed, then neither the download nor the payment happened, and the opening is removed', async () => {
    const s = await oneDownloadShare()
    const shares = new ShareRepository(deps.db)
    const failing = Object.create(shares) as ShareRepository
    failing.decrementRemaining = async () => {
      throw new Error('Connection terminated unexpectedly')
    }
    const transfers = new DownloadTransfers({
      repo: new TransferRepository(deps.db),
      gate: new DownloadGate(deps.kv, failing, systemClock),
      clock: systemClock,
      rule,
    })
    const key = { shareId: s.share.id, path: s.path, receiver: '203.0.113.42' }
    await expect(transfers.admit(s.share, key, s.size, s.size)).rejects.toThrow('Connection terminated')
    expect(await s.remaining()).toBe(1)
    const deadline = Date.now() + 5_000
    while ((await s.transfers()).length > 0 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50))
    expect(await s.transfers()).toEqual([])
    // The download is still there for this receiver.
    const again = new DownloadTransfers({
      repo: new TransferRepository(deps.db),
      gate: new DownloadGate(deps.kv, shares, systemClock),
      clock: systemClock,
      rule,
    })
    expect(await again.admit(s.share, key, s.size, s.size)).toMatchObject({ opened: true })
    expect(await s.remaining()).toBe(0)
  })
})
