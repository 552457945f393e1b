import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const sha = (b: Buffer | ArrayBuffer) =>
  createHash('sha256')
    .update(Buffer.from(b as ArrayBuffer))
    .digest('hex')

async function shareOf(
  files: Array<Awaited<ReturnType<typeof uploadFile>>['file']>,
  extra: Record<string, unknown> = {},
) {
  return api(h, 'POST', '/api/share', { files, ...extra })
}

let receivers = 0
/**
 * A download by a receiver of its own (address): since issue 42 one receiver's downloads of a
 * file within the resume window are one download, so counting tests ask as many receivers.
 */
async function download(code: string, p: string, receiver = `10.41.${++receivers >> 8}.${receivers & 255}`) {
  const res = await fetch(`${h.url}/api/download?code=${code}&path=${encodeURIComponent(p)}`, {
    headers: { 'x-forwarded-for': receiver },
  })
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) }
}

describe('blob store: upload → share → take → download', () => {
  it('when a file goes through the whole flow, then the downloaded bytes have the same sha256', async () => {
    const data = randomBytes(300_000)
    const { file, uploadStatus, grant } = await uploadFile(h, {
      name: 'report.pdf',
      data,
      type: 'application/pdf',
    })
    expect(uploadStatus).toBe(201)
    expect(grant.body.options).toEqual({ allowOverwrite: false, maximumSizeInBytes: 1048576000 })
    expect(grant.body.pathname).toMatch(/^[0-9a-f]{32}\/report\.pdf$/)

    const shared = await shareOf([file], { maxDownloads: 2, expireDays: 3 })
    expect(shared.status).toBe(200)
    expect(shared.body.code).toMatch(/^\d{12}$/)

    const taken = await api(h, 'POST', '/api/take', { code: shared.body.code })
    expect(taken.status).toBe(200)
    expect(taken.body.remaining).toBe(2)
    expect(taken.body.manifest).toMatchObject({
      code: shared.body.code,
      files: [{ name: 'report.pdf', size: data.length, type: 'application/pdf', path: file.pathname }],
    })
    const days =
      (Date.parse(taken.body.manifest.expiresAt) - Date.parse(taken.body.manifest.createdAt)) / 86_400_000
    expect(Math.round(days)).toBe(3)

    const got = await download(shared.body.code, file.pathname)
    expect(got.status).toBe(200)
    expect(sha(got.body)).toBe(sha(data))
    expect(got.headers.get('content-length')).toBe(String(data.length))
    expect(got.headers.get('content-type')).toBe('application/pdf')
    expect(got.headers.get('content-disposition')).toBe('attachment; filename=report.pdf')
    expect(got.headers.get('x-content-type-options')).toBe('nosniff')
    expect(got.headers.get('cache-control')).toBe('no-store')
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).body.remaining).toBe(1)
    const head = await fetch(
      `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`,
      { method: 'HEAD' },
    )
    // The GET's headers, no body, and no download spent.
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe(String(data.length))
    expect(head.headers.get('accept-ranges')).toBe('bytes')
    expect(head.headers.get('etag')).toBe(got.headers.get('etag'))
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).body.remaining).toBe(1)
  })

  it('when the last download ends with its budget spent, then take gives 410 (used up) and the files are deleted', async () => {
    const { file } = await uploadFile(h, { name: 'once.bin', data: randomBytes(1000) })
    const { body } = await shareOf([file], { maxDownloads: 1 })
    expect((await download(body.code, file.pathname, '10.41.200.1')).status).toBe(200)
    const taken = await api(h, 'POST', '/api/take', { code: body.code })
    expect(taken.status).toBe(410)
    expect(taken.body.error.code).toBe('share_used_up')
    expect((await download(body.code, file.pathname)).status).toBe(410)
    // Issue 42: the receiver's transfer stays open until its window ends or its budget (3 copies)
    // is spent; the share's files go when its last transfer can no longer come back.
    expect((await download(body.code, file.pathname, '10.41.200.1')).status).toBe(200)
    expect(existsSync(path.join(h.config.BLOB_DIR, file.pathname))).toBe(true)
    expect((await download(body.code, file.pathname, '10.41.200.1')).status).toBe(200)
    // The delete follows the download's end (database rows, the store's free space, then the
    // file); on a loaded CI machine that has taken over a second, so it gets ten.
    for (let i = 0; i < 500 && existsSync(path.join(h.config.BLOB_DIR, file.pathname)); i++)
      await new Promise((r) => setTimeout(r, 20))
    expect(existsSync(path.join(h.config.BLOB_DIR, file.pathname))).toBe(false)
  })

  it('when the type is HTML or SVG, then the download is application/octet-stream', async () => {
    const { file } = await uploadFile(h, {
      name: 'x.html',
      data: Buffer.from('<script>alert(1)</script>'),
      type: 'text/html',
    })
    const svg = await uploadFile(h, { name: 'x.svg', data: Buffer.from('<svg/>'), type: 'image/svg+xml' })
    const { body } = await shareOf([file, svg.file])
    expect((await download(body.code, file.pathname)).headers.get('content-type')).toBe(
      'application/octet-stream',
    )
    expect((await download(body.code, svg.file.pathname)).headers.get('content-type')).toBe(
      'application/octet-stream',
    )
  })
})

describe('download counting', () => {
  async function countedShare(maxDownloads: number) {
    const data = randomBytes(64 * 1024)
    const { file } = await uploadFile(h, { name: 'race.bin', data })
    const { body } = await shareOf([file], { maxDownloads })
    const row = await deps.db.share.findUniqueOrThrow({ where: { code: body.code } })
    return { code: body.code as string, id: row.id, file, data }
  }

  async function burst(code: string, p: string, n: number, during?: () => Promise<unknown>) {
    const all = Array.from({ length: n }, () => download(code, p))
    if (during) await during()
    return Promise.all(all)
  }

  it('when 30 downloads race on maxDownloads 3, then exactly 3 complete bodies are sent and the rest get 410 (used up)', async () => {
    const s = await countedShare(3)
    const results = await burst(s.code, s.file.pathname, 30)
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(3)
    for (const r of ok) expect(sha(r.body)).toBe(sha(s.data))
    expect(
      results
        .filter((r) => r.status !== 200)
        .map((r) => `${r.status} ${r.body.toString()}`)
        .filter((t) => !t.startsWith('410')),
    ).toEqual([])
    expect(results.filter((r) => r.status === 410)).toHaveLength(27)
  })

  it('when the kv loses its counters between downloads, then it is re-seeded from Postgres, not reset to the maximum', async () => {
    const s = await countedShare(3)
    expect((await download(s.code, s.file.pathname)).status).toBe(200)
    await deps.kv.del(`dl:${s.id}`)
    await deps.kv.del(`inflight:${s.id}`)
    const results = await burst(s.code, s.file.pathname, 30)
    expect(results.filter((r) => r.status === 200)).toHaveLength(2)
  })

  it('when the kv loses its counters in the middle of a burst, then still exactly 3 bodies are sent', async () => {
    const s = await countedShare(3)
    const results = await burst(s.code, s.file.pathname, 30, async () => {
      await new Promise((r) => setImmediate(r))
      await deps.kv.del(`dl:${s.id}`)
    })
    expect(results.filter((r) => r.status === 200)).toHaveLength(3)
    const row = await deps.db.share.findUnique({ where: { id: s.id } })
    expect(row === null || row.remaining === 0).toBe(true)
  })

  it('when the store fails before the first byte, then the reservation is refunded', async () => {
    const s = await countedShare(2)
    const { rmSync } = await import('node:fs')
    rmSync(path.join(h.config.BLOB_DIR, s.file.pathname))
    const failed = await download(s.code, s.file.pathname)
    expect(failed.status).toBe(404)
    expect(JSON.parse(failed.body.toString()).error.code).toBe('file_not_found')
    expect((await api(h, 'POST', '/api/take', { code: s.code })).body.remaining).toBe(2)
  })
})
