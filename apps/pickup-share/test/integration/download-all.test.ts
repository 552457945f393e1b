import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, unlinkSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fromBuffer, type Entry, type ZipFile } from 'yauzl'
import { api, flood, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// s3rver speaks the S3 protocol on loopback; it ships no types.
const S3rver = require('s3rver') as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

const deps = testDeps()
const BUCKET = 'quartet-test-zip'
let h: Harness
let s3: InstanceType<typeof S3rver>
let s3Dir: string

beforeAll(async () => {
  s3Dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-'))
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET }],
  })
  const { port } = await s3.run()
  h = await startHarness(deps, {
    config: {
      S3_ENDPOINT: `http://127.0.0.1:${port}`,
      S3_ACCESS_KEY: 'S3RVER',
      S3_SECRET_KEY: 'S3RVER',
      S3_BUCKET: BUCKET,
    },
  })
})
afterAll(async () => {
  await h.close()
  await s3.close()
  rmSync(s3Dir, { recursive: true, force: true })
})

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** Every entry of a ZIP: name → sha256 of its bytes (read with yauzl, which checks the CRCs). */
async function unzip(zip: Buffer): Promise<Map<string, string>> {
  const archive = await new Promise<ZipFile>((resolve, reject) =>
    fromBuffer(zip, { lazyEntries: true, validateEntrySizes: true }, (err, z) =>
      err ? reject(err) : resolve(z),
    ),
  )
  const out = new Map<string, string>()
  await new Promise<void>((resolve, reject) => {
    archive.on('error', reject)
    archive.on('end', resolve)
    archive.on('entry', (entry: Entry) => {
      archive.openReadStream(entry, (err, stream) => {
        if (err) return reject(err)
        const chunks: Buffer[] = []
        stream.on('data', (c: Buffer) => chunks.push(c))
        stream.on('error', reject)
        stream.on('end', () => {
          out.set(entry.fileName, sha(Buffer.concat(chunks)))
          archive.readEntry()
        })
      })
    })
    archive.readEntry()
  })
  return out
}

async function getZip(query: string, init: RequestInit = {}) {
  const res = await fetch(`${h.url}/api/download-all?${query}`, init)
  const body = Buffer.from(await res.arrayBuffer())
  return { status: res.status, headers: res.headers, body }
}

const remaining = async (code: string) => (await api(h, 'POST', '/api/take', { code })).body.remaining

async function shareOf(
  files: Array<{ name: string; data: Buffer; store?: 'blob' | 'bucket' }>,
  maxDownloads: number | null,
) {
  const uploaded = []
  for (const f of files) {
    const { file, uploadStatus } = await uploadFile(h, f)
    expect(uploadStatus).toBeLessThan(300)
    uploaded.push(file)
  }
  const shared = await api(h, 'POST', '/api/share', { files: uploaded, maxDownloads })
  expect(shared.status).toBe(200)
  return { code: shared.body.code as string, token: shared.body.token as string, files: uploaded }
}

describe('download all: one streamed ZIP of the whole share', () => {
  it('when a share of four files (one empty, two of the same name, one non-ASCII) is downloaded as a ZIP, then every entry has its sha256 and the share spends ONE download', async () => {
    const files = [
      { name: 'report.pdf', data: randomBytes(300_000) },
      { name: 'notes.txt', data: randomBytes(1_000) },
      { name: 'Notes.txt', data: randomBytes(2_000) },
      { name: 'empty.bin', data: Buffer.alloc(0) },
      { name: '照片 été.jpg', data: randomBytes(70_000) },
    ]
    const share = await shareOf(files, 3)

    const head = await fetch(`${h.url}/api/download-all?code=${share.code}`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await remaining(share.code)).toBe(3) // a HEAD counts nothing

    const zip = await getZip(`code=${share.code}`)
    expect(zip.status).toBe(200)
    expect(zip.headers.get('content-type')).toBe('application/zip')
    expect(zip.headers.get('content-length')).toBe(String(zip.body.length))
    expect(head.headers.get('content-length')).toBe(String(zip.body.length))
    expect(zip.headers.get('content-disposition')).toBe(`attachment; filename=pickup-${share.code}.zip`)
    expect(zip.headers.get('cache-control')).toBe('no-store')
    // Issue 42: a cut archive is resumed with Range like a file (download-tools.test.ts).
    expect(zip.headers.get('accept-ranges')).toBe('bytes')
    expect(zip.headers.get('etag')).toMatch(/^"[\w-]{27}"$/)
    const entries = await unzip(zip.body)
    expect([...entries.keys()]).toEqual([
      'report.pdf',
      'notes.txt',
      'Notes (2).txt',
      'empty.bin',
      '照片 été.jpg',
    ])
    expect([...entries.values()]).toEqual(files.map((f) => sha(f.data)))
    expect(await remaining(share.code)).toBe(2)

    // By the pickup link's token, the same receiver: the same archive, within its open transfer
    // (issue 42: one download per receiver and archive for the resume window) ...
    const byLink = await getZip(`token=${share.token}`)
    expect(byLink.status).toBe(200)
    expect(sha(byLink.body)).toBe(sha(zip.body))
    expect(await remaining(share.code)).toBe(2)
    // ... while another receiver pays its own.
    const other = await getZip(`token=${share.token}`, { headers: { 'x-forwarded-for': '198.51.100.77' } })
    expect(sha(other.body)).toBe(sha(zip.body))
    expect(await remaining(share.code)).toBe(1)

    // The per-file download is unchanged beside it.
    const one = await fetch(
      `${h.url}/api/download?code=${share.code}&path=${encodeURIComponent(share.files[0]!.pathname)}`,
    )
    expect(one.status).toBe(200)
    expect(sha(Buffer.from(await one.arrayBuffer()))).toBe(sha(files[0]!.data))
  })

  it("when the last download was spent by a ZIP, then another receiver's ZIP is refused", async () => {
    const share = await shareOf([{ name: 'a.txt', data: randomBytes(5_000) }], 1)
    expect((await getZip(`code=${share.code}`)).status).toBe(200)
    const again = await getZip(`code=${share.code}`, { headers: { 'x-forwarded-for': '198.51.100.78' } })
    expect(again.status).toBeGreaterThanOrEqual(400)
    expect(again.headers.get('content-type')).toMatch(/json/)
  })

  it('when 12 ZIPs of a 3-download share are asked at once by one address, then exactly 9 archives are sent (3 a download: budget 3 × size) and the share is used up', async () => {
    const data = randomBytes(400_000)
    const share = await shareOf(
      [
        { name: 'x.bin', data },
        { name: 'y.bin', data: randomBytes(10) },
      ],
      3,
    )
    const results = await flood(12, () => getZip(`code=${share.code}`), 12)
    // A request that could not have its turn within the deadline (a loaded machine) is told to
    // come back (503 with Retry-After); it asks again, as a client does.
    for (const [i, r] of results.entries()) {
      let answer = r
      for (let tries = 0; answer.status === 503 && tries < 10; tries++) {
        expect(answer.headers.get('retry-after')).toMatch(/^\d+$/)
        await new Promise((resolve) => setTimeout(resolve, 200))
        answer = await getZip(`code=${share.code}`)
      }
      results[i] = answer
    }
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(9)
    for (const r of ok) expect((await unzip(r.body)).get('x.bin')).toBe(sha(data))
    expect(results.filter((r) => r.status !== 200).every((r) => r.status === 404 || r.status === 410)).toBe(
      true,
    )
    expect(
      results.map((r) => r.status).filter((status) => status !== 200 && status !== 404 && status !== 410),
    ).toEqual([])
    expect((await api(h, 'POST', '/api/take', { code: share.code })).status).not.toBe(200)
  })

  it('when a receiver downloads the files one by one and then the ZIP, then each file and the ZIP spend one download each (the ZIP is a file of its own)', async () => {
    const files = [
      { name: 'one.bin', data: randomBytes(3_000) },
      { name: 'two.bin', data: randomBytes(4_000) },
    ]
    const share = await shareOf(files, 4)
    for (const f of share.files) {
      const res = await fetch(
        `${h.url}/api/download?code=${share.code}&path=${encodeURIComponent(f.pathname)}`,
      )
      expect(res.status).toBe(200)
      await res.arrayBuffer()
    }
    expect(await remaining(share.code)).toBe(2)
    expect((await getZip(`code=${share.code}`)).status).toBe(200)
    expect(await remaining(share.code)).toBe(1)
    // Again, within the window: all three transfers are open, nothing more is spent.
    for (const f of share.files)
      await (
        await fetch(`${h.url}/api/download?code=${share.code}&path=${encodeURIComponent(f.pathname)}`)
      ).arrayBuffer()
    expect((await getZip(`code=${share.code}`)).status).toBe(200)
    expect(await remaining(share.code)).toBe(1)
  })

  it('when the first file is missing from the store, then the answer is an error in the envelope and no download is spent', async () => {
    const share = await shareOf(
      [
        { name: 'gone.bin', data: randomBytes(1_000) },
        { name: 'kept.bin', data: randomBytes(1_000) },
      ],
      2,
    )
    unlinkSync(path.join(h.config.BLOB_DIR, share.files[0]!.pathname))
    const zip = await getZip(`code=${share.code}`)
    // The blob store reports the missing object as it does for a single file.
    expect(zip.status).toBe(404)
    expect(JSON.parse(zip.body.toString()).error.code).toBe('file_not_found')
    expect(await remaining(share.code)).toBe(2)
  })

  it('when a share holds files of the blob and the bucket store, then the ZIP carries both byte-exact', async () => {
    const a = randomBytes(200_000)
    const b = randomBytes(300_000)
    const share = await shareOf(
      [
        { name: 'disk.bin', data: a, store: 'blob' },
        { name: 'bucket.bin', data: b, store: 'bucket' },
      ],
      2,
    )
    const zip = await getZip(`code=${share.code}`)
    expect(zip.status).toBe(200)
    const entries = await unzip(zip.body)
    expect(entries.get('disk.bin')).toBe(sha(a))
    expect(entries.get('bucket.bin')).toBe(sha(b))
    expect(await remaining(share.code)).toBe(1)
  })

  it('when the query names neither a code nor a token, or both, then 400', async () => {
    expect((await getZip('')).status).toBe(400)
    expect((await getZip('code=123456789012&token=abcdefghijklmnopqrstuv')).status).toBe(400)
  })
})
