import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// s3rver speaks the S3 protocol on loopback; it ships no types.
const S3rver = require('s3rver') as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

const deps = testDeps()
const BUCKET = 'quartet-test-shares'
let h: Harness
let s3: InstanceType<typeof S3rver>
let s3Dir: string
let endpoint: string

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
  endpoint = `http://127.0.0.1:${port}`
  h = await startHarness(deps, {
    config: { S3_ENDPOINT: endpoint, S3_ACCESS_KEY: 'S3RVER', S3_SECRET_KEY: 'S3RVER', S3_BUCKET: BUCKET },
  })
})
afterAll(async () => {
  await h.close()
  await s3.close()
  rmSync(s3Dir, { recursive: true, force: true })
})

const sha = (b: Buffer | ArrayBuffer) =>
  createHash('sha256')
    .update(Buffer.from(b as ArrayBuffer))
    .digest('hex')

describe('bucket store (S3 protocol, s3rver)', () => {
  it('when a file goes through the whole flow via a POST policy, then the downloaded bytes have the same sha256', async () => {
    const data = randomBytes(500_000)
    const { file, uploadStatus, grant } = await uploadFile(h, {
      name: 'photo.jpg',
      data,
      type: 'image/jpeg',
      store: 'bucket',
    })
    expect(grant.body.upload.method).toBe('POST')
    expect(grant.body.upload.url).toBe(`${endpoint}/${BUCKET}`)
    expect(uploadStatus).toBeGreaterThanOrEqual(200)
    expect(uploadStatus).toBeLessThan(300)
    const shared = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })
    expect(shared.status).toBe(200)
    const taken = await api(h, 'POST', '/api/take', { code: shared.body.code })
    expect(taken.body.manifest.files[0]).toMatchObject({
      name: 'photo.jpg',
      size: data.length,
      path: file.pathname,
    })
    const res = await fetch(
      `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`,
    )
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/jpeg')
    expect(res.headers.get('location')).toBeNull()
    expect(sha(await res.arrayBuffer())).toBe(sha(data))
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).status).toBe(410)
  })

  it('when a POST policy is issued, then it pins the exact key and a content-length-range of exactly the declared size', async () => {
    const { body } = await api(h, 'POST', '/api/upload', {
      store: 'bucket',
      name: 'x.bin',
      size: 10,
      type: 'application/octet-stream',
    })
    const fields = body.upload.fields as Record<string, string>
    expect(fields.key).toBe(body.pathname)
    const policy = JSON.parse(Buffer.from(fields.policy!, 'base64').toString('utf8')) as {
      conditions: unknown[]
    }
    expect(policy.conditions).toContainEqual(['eq', '$key', body.pathname])
    expect(policy.conditions).toContainEqual(['content-length-range', 10, 10])
    expect(policy.conditions).toContainEqual(['eq', '$bucket', BUCKET])
    expect(fields['x-amz-signature']).toMatch(/^[0-9a-f]{64}$/)
  })

  it('when a larger file than declared was uploaded (s3rver does not enforce the policy), then share refuses it and deletes it', async () => {
    const { file } = await uploadFile(h, {
      name: 'big.bin',
      data: randomBytes(5000),
      store: 'bucket',
      declaredSize: 900,
    })
    const store = h.services.storage.defaultFor('bucket')!
    expect((await store.stat(file.pathname))?.size).toBe(5000)
    const res = await api(h, 'POST', '/api/share', { files: [{ ...file, size: 900 }] })
    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('file_too_large')
    expect(await store.stat(file.pathname)).toBeNull()
  })

  it('when a smaller file than declared was uploaded, then share refuses it with size_mismatch', async () => {
    const { file } = await uploadFile(h, {
      name: 'small.bin',
      data: randomBytes(500),
      store: 'bucket',
      declaredSize: 900,
    })
    for (const size of [500, 900]) {
      const res = await api(h, 'POST', '/api/share', { files: [{ ...file, size }] })
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('size_mismatch')
    }
  })

  it('when 20 downloads race on maxDownloads 2, then exactly 2 bodies are sent', async () => {
    const data = randomBytes(50_000)
    const { file } = await uploadFile(h, { name: 'r.bin', data, store: 'bucket' })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 2 })).body
    const results = await Promise.all(
      // Twenty receivers (issue 42: one receiver's downloads within the window are one download).
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(
          `${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`,
          {
            headers: { 'x-forwarded-for': `10.45.0.${i + 1}` },
          },
        )
        return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
      }),
    )
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(2)
    for (const r of ok) expect(sha(r.body)).toBe(sha(data))
  })

  it('when a range is asked, then the bucket serves exactly those bytes (206) and the transfer spends one download', async () => {
    const data = randomBytes(100_000)
    const { file } = await uploadFile(h, { name: 'part.bin', data, store: 'bucket' })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })).body
    const url = `${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`
    const parts = await Promise.all(
      ['bytes=0-49999', 'bytes=50000-'].map(async (range) => {
        const res = await fetch(url, { headers: { range } })
        expect(res.status).toBe(206)
        return Buffer.from(await res.arrayBuffer())
      }),
    )
    expect(sha(Buffer.concat(parts))).toBe(sha(data))
    expect((await api(h, 'POST', '/api/take', { code })).status).toBe(410)
  })

  it('when the object is missing in the bucket, then 404 and the download is refunded', async () => {
    const { file } = await uploadFile(h, { name: 'gone.bin', data: randomBytes(100), store: 'bucket' })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 2 })).body
    await h.services.storage.defaultFor('bucket')!.delete(file.pathname)
    const res = await fetch(`${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`)
    expect(res.status).toBe(404)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(2)
  })

  it('when presigned PUT is configured instead, then the permission is a PUT and share checks the size after upload', async () => {
    const put = await startHarness(deps, {
      config: {
        S3_ENDPOINT: endpoint,
        S3_ACCESS_KEY: 'S3RVER',
        S3_SECRET_KEY: 'S3RVER',
        S3_BUCKET: BUCKET,
        S3_POST_POLICY: false,
      },
    })
    try {
      const data = randomBytes(2000)
      const { file, uploadStatus, grant } = await uploadFile(put, { name: 'p.bin', data, store: 'bucket' })
      expect(grant.body.upload.method).toBe('PUT')
      // The signature covers the length: S3 refuses a body of any other length (s3rver checks no V4 signature).
      const signed = new URL(grant.body.upload.url).searchParams
      expect(signed.get('X-Amz-SignedHeaders')).toBe('content-length;host')
      expect(uploadStatus).toBe(200)
      const shared = await api(put, 'POST', '/api/share', { files: [file] })
      expect(shared.status).toBe(200)
      const res = await fetch(
        `${put.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`,
      )
      expect(sha(await res.arrayBuffer())).toBe(sha(data))
    } finally {
      await put.close()
    }
  })

  it('when the S3 server goes down, then share and download answer 503 with Retry-After (not 500), and no download is spent', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-down-'))
    const down = new S3rver({
      address: '127.0.0.1',
      port: 0,
      silent: true,
      directory: dir,
      configureBuckets: [{ name: BUCKET }],
    })
    const { port } = await down.run()
    const other = await startHarness(deps, {
      config: {
        S3_ENDPOINT: `http://127.0.0.1:${port}`,
        S3_ACCESS_KEY: 'S3RVER',
        S3_SECRET_KEY: 'S3RVER',
        S3_BUCKET: BUCKET,
      },
    })
    try {
      const shared = await uploadFile(other, { name: 'a.bin', data: randomBytes(1000), store: 'bucket' })
      const pending = await uploadFile(other, { name: 'b.bin', data: randomBytes(1000), store: 'bucket' })
      const { code } = (await api(other, 'POST', '/api/share', { files: [shared.file], maxDownloads: 1 }))
        .body
      await down.close()
      const share = await api(other, 'POST', '/api/share', { files: [pending.file] })
      expect(share.status).toBe(503)
      expect(share.headers.get('retry-after')).toBe('5')
      expect(share.body.error.code).toBe('service_unavailable')
      const dl = await api(
        other,
        'GET',
        `/api/download?code=${code}&path=${encodeURIComponent(shared.file.pathname)}`,
      )
      expect(dl.status).toBe(503)
      expect(dl.body.error.code).toBe('service_unavailable')
      expect((await api(other, 'POST', '/api/take', { code })).body.remaining).toBe(1)
    } finally {
      await other.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
