import { createHash } from 'node:crypto'
import { createReadStream, existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import * as tus from 'tus-js-client'
import { adminLogin, api, type Harness, startHarness, testDeps } from '../support/harness.ts'
import { s3rverWithListParts } from '../support/s3-list-parts.ts'
import { CuttingProxy, targetOf, writeGeneratedFile } from '../support/tus.ts'

// s3rver speaks the S3 protocol on loopback; it ships no types.
const S3rver = require('s3rver') as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

const MB = 1024 * 1024
const SIZE = 300 * MB
const deps = testDeps()
const BUCKET = 'quartet-tus'
let a: Harness
let b: Harness
let s3: InstanceType<typeof S3rver>
let s3Front: Awaited<ReturnType<typeof s3rverWithListParts>>
let tmp: string
let file: string
let fileSha: string
let s3Config: Record<string, string>

beforeAll(async () => {
  tmp = mkdtempSync(path.join(os.tmpdir(), 'tus-test-'))
  file = path.join(tmp, 'big.bin')
  fileSha = await writeGeneratedFile(file, SIZE)
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: path.join(tmp, 's3'),
    configureBuckets: [{ name: BUCKET }],
  })
  const { port } = await s3.run()
  s3Front = await s3rverWithListParts(port, path.join(tmp, 's3'))
  s3Config = {
    S3_ENDPOINT: s3Front.url,
    S3_ACCESS_KEY: 'S3RVER',
    S3_SECRET_KEY: 'S3RVER',
    S3_BUCKET: BUCKET,
  }
  a = await startHarness(deps, { config: s3Config })
  // A second replica: the same database, Redis, blob folder and bucket, its own process state.
  b = await startHarness(deps, { config: { ...s3Config, BLOB_DIR: a.config.BLOB_DIR } })
}, 120_000)

afterAll(async () => {
  await b?.close()
  await a?.close()
  await s3Front?.close()
  await s3?.close()
  rmSync(tmp, { recursive: true, force: true })
})

interface Grant {
  pathname: string
  proof: string
  tus: { endpoint: string; headers: Record<string, string> }
}

async function permission(h: Harness, store: 'blob' | 'bucket', name: string, size: number): Promise<Grant> {
  const res = await api(h, 'POST', '/api/upload', { store, name, size })
  expect(res.status).toBe(200)
  return res.body
}

/** tus-js-client, unmodified, reading the file from disk (it reopens it at the offset on resume). */
function tusUpload(
  base: string,
  grant: Grant,
  source: string,
  size: number,
  options: Partial<tus.UploadOptions> = {},
): { done: Promise<string>; upload: tus.Upload } {
  let upload!: tus.Upload
  const done = new Promise<string>((resolve, reject) => {
    upload = new tus.Upload(createReadStream(source), {
      endpoint: `${base}${grant.tus.endpoint}`,
      headers: grant.tus.headers,
      uploadSize: size,
      metadata: { filename: path.basename(grant.pathname) },
      retryDelays: [200, 500, 1000, 2000, 3000],
      ...options,
      onSuccess: () => resolve(upload.url!),
      onError: reject,
    })
    upload.start()
  })
  return { done, upload }
}

async function shareAndHash(
  h: Harness,
  store: 'blob' | 'bucket',
  grant: Grant,
  size: number,
): Promise<string> {
  const name = path.basename(grant.pathname)
  const shared = await api(h, 'POST', '/api/share', {
    files: [
      { name, size, type: 'application/octet-stream', pathname: grant.pathname, store, proof: grant.proof },
    ],
    maxDownloads: 1,
  })
  expect(shared.status).toBe(200)
  const res = await fetch(
    `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(grant.pathname)}`,
  )
  expect(res.status).toBe(200)
  const hash = createHash('sha256')
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk)
  return hash.digest('hex')
}

describe('resumable uploads (tus 1.0) with tus-js-client', () => {
  it.each(['blob', 'bucket'] as const)(
    'when the connection of a 300 MB %s upload is cut at half, then tus-js-client resumes where it stopped and the download has the same sha256',
    async (store) => {
      const proxy = await new CuttingProxy(targetOf(a.url)).start()
      try {
        const grant = await permission(a, store, `${store}.bin`, SIZE)
        proxy.cutAfter(SIZE / 2)
        const { done } = tusUpload(proxy.url, grant, file, SIZE)
        await done
        expect(proxy.cuts).toBe(1)
        // Resumed, not restarted: the bytes sent are the file once plus at most what was in
        // flight when the cut came (socket buffers, and for S3 the unfinished part).
        expect(proxy.upstreamBytes).toBeLessThan(SIZE + 40 * MB)
        expect(await shareAndHash(a, store, grant, SIZE)).toBe(fileSha)
      } finally {
        await proxy.close()
      }
    },
    180_000,
  )

  it('when an upload started on one replica is cut, then it resumes on another replica', async () => {
    const size = 64 * MB
    const part = path.join(tmp, 'replica.bin')
    const sha = await writeGeneratedFile(part, size, 2)
    const proxy = await new CuttingProxy(targetOf(a.url)).start()
    try {
      const grant = await permission(a, 'blob', 'replica.bin', size)
      proxy.cutAfter(size / 2)
      // The first replica goes away at the cut; the retry's HEAD and PATCH reach the second.
      const cut = new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (proxy.cuts > 0) {
            clearInterval(timer)
            proxy.target = targetOf(b.url)
            resolve()
          }
        }, 1)
      })
      const { done } = tusUpload(proxy.url, grant, part, size, { retryDelays: [300, 600, 1000, 2000] })
      await cut
      await done
      expect(proxy.upstreamBytes).toBeLessThan(size + 24 * MB)
      expect(await shareAndHash(b, 'blob', grant, size)).toBe(sha)
    } finally {
      await proxy.close()
    }
  }, 60_000)

  it.each(['blob', 'bucket'] as const)(
    'when an unfinished %s upload expires, then the sweep removes it and gives its reservation back, once across replicas',
    async (store) => {
      // Long enough that the first chunk lands before the upload expires on a loaded machine
      // (with 1 s, CI once saw the chunk's PATCH answered 410; with 3 s, a run 2.5 times slower
      // than usual saw the HEAD after it answered 410).
      const c = await startHarness(deps, { config: { ...s3Config, TUS_EXPIRY_SECONDS: 8 } })
      const d = await startHarness(deps, {
        config: { ...s3Config, TUS_EXPIRY_SECONDS: 8, BLOB_DIR: c.config.BLOB_DIR },
      })
      try {
        const admin = await adminLogin(c)
        const reserved = async () =>
          (await api(c, 'GET', '/api/admin/stores', undefined, admin)).body.items.find(
            (s: { name: string }) => s.name === store,
          ).reservedBytes as number
        const before = await reserved()
        const size = 4 * MB
        const part = path.join(tmp, 'expire.bin')
        await writeGeneratedFile(part, size, 3)
        const grant = await permission(c, store, 'expire.bin', size)
        expect(await reserved()).toBe(before + size)
        // One 1 MB chunk, then the client goes away.
        let url = ''
        await new Promise<void>((resolve, reject) => {
          const { upload } = tusUpload(c.url, grant, part, size, {
            chunkSize: MB,
            onChunkComplete: () => {
              url = upload.url!
              void upload.abort().then(resolve, reject)
            },
          })
        })
        const head = await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })
        expect(head.status).toBe(200)
        expect(head.headers.get('upload-offset')).toBe(String(MB))
        await new Promise((resolve) => setTimeout(resolve, 8100))
        // Two replicas sweep at the same moment: the permission is deleted, and released, once.
        const swept = await Promise.all([
          c.services.resumable.sweepExpired(),
          d.services.resumable.sweepExpired(),
        ])
        expect(swept.sort()).toEqual([0, 1])
        expect(await reserved()).toBe(before)
        const gone = await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })
        expect([404, 410]).toContain(gone.status)
        // Nothing of it is left in the store: no partial file, no S3 part or record.
        const prefix = grant.pathname.split('/')[0]!
        expect(existsSync(path.join(c.config.BLOB_DIR, '.tus', prefix))).toBe(false)
        const left: string[] = []
        for await (const o of c.services.storage.instance(store)!.list())
          if (o.pathname.startsWith(prefix)) left.push(o.pathname)
        expect(left).toEqual([])
        const shared = await api(c, 'POST', '/api/share', {
          files: [
            {
              name: 'expire.bin',
              size,
              type: 'application/octet-stream',
              pathname: grant.pathname,
              proof: grant.proof,
              store,
            },
          ],
        })
        expect(shared.status).toBe(400)
      } finally {
        await d.close()
        await c.close()
      }
    },
    60_000,
  )

  it('when a PATCH comes after the upload expired, before or after the sweep, then it is 410 with the reason, and once swept 404', async () => {
    const c = await startHarness(deps, { config: { TUS_EXPIRY_SECONDS: 1 } })
    try {
      const patch = async (url: URL) => {
        const res = await fetch(url, {
          method: 'PATCH',
          headers: {
            'tus-resumable': '1.0.0',
            'upload-offset': '0',
            'content-type': 'application/offset+octet-stream',
          },
          body: new Uint8Array(16),
        })
        return { status: res.status, text: await res.text() }
      }
      const create = async (name: string) => {
        const grant = await permission(c, 'blob', name, 1024)
        const created = await fetch(`${c.url}${grant.tus.endpoint}`, {
          method: 'POST',
          headers: { 'tus-resumable': '1.0.0', ...grant.tus.headers, 'upload-length': '1024' },
        })
        return new URL(created.headers.get('location')!, c.url)
      }
      const unswept = await create('late.bin')
      const swept = await create('later.bin')
      await new Promise((resolve) => setTimeout(resolve, 1200))
      // Past Upload-Expires, not yet swept: tus's own check.
      expect(await patch(unswept)).toEqual({ status: 410, text: expect.stringMatching(/expired/) })
      // Swept: gone, as any unknown upload (a PATCH that met the sweep half-way is the 410 above).
      await c.services.resumable.sweepExpired()
      expect((await patch(swept)).status).toBe(404)
    } finally {
      await c.close()
    }
  })

  it('when an upload expires while a PATCH is still writing to it, then the sweep stops that PATCH at once with 410, removes the upload and gives its reservation back', async () => {
    const c = await startHarness(deps, { config: { TUS_EXPIRY_SECONDS: 1 } })
    let trickle: NodeJS.Timeout | undefined
    try {
      const admin = await adminLogin(c)
      const reserved = async () =>
        (await api(c, 'GET', '/api/admin/stores', undefined, admin)).body.items.find(
          (s: { name: string }) => s.name === 'blob',
        ).reservedBytes as number
      const before = await reserved()
      const size = 4 * MB
      const grant = await permission(c, 'blob', 'slow.bin', size)
      const created = await fetch(`${c.url}${grant.tus.endpoint}`, {
        method: 'POST',
        headers: { 'tus-resumable': '1.0.0', ...grant.tus.headers, 'upload-length': String(size) },
      })
      const url = new URL(created.headers.get('location')!, c.url)
      // A slow client: 64 kB every 50 ms, still sending when the upload expires. Left alone it would
      // send past the upload's length (the PATCH would end 413 after 3.2 s).
      const body = new Readable({ read() {} })
      let sent = 0
      trickle = setInterval(() => {
        body.push(Buffer.alloc(64 * 1024, 1))
        sent += 64 * 1024
      }, 50)
      const patching = fetch(url, {
        method: 'PATCH',
        headers: {
          'tus-resumable': '1.0.0',
          'upload-offset': '0',
          'content-type': 'application/offset+octet-stream',
        },
        body: Readable.toWeb(body) as ReadableStream,
        duplex: 'half',
      } as RequestInit).then(
        async (res) => ({ status: res.status, text: await res.text(), sent }),
        () => ({ status: 'connection closed', text: '', sent }),
      )
      await new Promise((resolve) => setTimeout(resolve, 1300))
      expect(await c.services.resumable.sweepExpired()).toBe(1)
      const ended = await patching
      // Stopped by the sweep, not by its own length: a 410 (or, when the client was still
      // writing as the server closed, the connection) — never a 204 for bytes now removed.
      expect(['410', 'connection closed']).toContain(String(ended.status))
      if (ended.status === 410) expect(ended.text).toMatch(/expired/)
      expect(ended.sent).toBeLessThan(size)
      expect(await reserved()).toBe(before)
      expect(existsSync(path.join(c.config.BLOB_DIR, '.tus', grant.pathname.split('/')[0]!))).toBe(false)
      const head = await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })
      expect(head.status).toBe(404)
    } finally {
      clearInterval(trickle)
      await c.close()
    }
  }, 30_000)

  it("when an upload's last byte is written but its request has not put it in place when it expires, then the sweep puts it in place and keeps it", async () => {
    const c = await startHarness(deps, { config: { TUS_EXPIRY_SECONDS: 1 } })
    try {
      const size = 256 * 1024
      const grant = await permission(c, 'blob', 'late.bin', size)
      const created = await fetch(`${c.url}${grant.tus.endpoint}`, {
        method: 'POST',
        headers: { 'tus-resumable': '1.0.0', ...grant.tus.headers, 'upload-length': String(size) },
      })
      expect(created.status).toBe(201)
      // Every byte written to the store, as a PATCH does before it lets go of the lock and runs its
      // finish hook: the moment a sweep can come between the two.
      const server = (await c.services.tus.serverFor('blob'))!
      await server.datastore.write(Readable.from([Buffer.alloc(size, 7)]), grant.pathname, 0)
      await new Promise((resolve) => setTimeout(resolve, 1100))
      expect(await c.services.resumable.sweepExpired()).toBe(0)
      const shared = await api(c, 'POST', '/api/share', {
        files: [
          {
            name: 'late.bin',
            size,
            type: 'application/octet-stream',
            pathname: grant.pathname,
            proof: grant.proof,
            store: 'blob',
          },
        ],
        maxDownloads: 1,
      })
      expect(shared.status).toBe(200)
      const res = await fetch(
        `${c.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(grant.pathname)}`,
      )
      expect(res.status).toBe(200)
      expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.alloc(size, 7))).toBe(true)
    } finally {
      await c.close()
    }
  }, 30_000)

  it('when the client terminates an unfinished upload, then its reservation goes back at once', async () => {
    const admin = await adminLogin(a)
    const reserved = async () =>
      (await api(a, 'GET', '/api/admin/stores', undefined, admin)).body.items.find(
        (s: { name: string }) => s.name === 'blob',
      ).reservedBytes as number
    const before = await reserved()
    const size = 2 * MB
    const part = path.join(tmp, 'terminate.bin')
    await writeGeneratedFile(part, size, 4)
    const grant = await permission(a, 'blob', 'terminate.bin', size)
    let url = ''
    await new Promise<void>((resolve, reject) => {
      const { upload } = tusUpload(a.url, grant, part, size, {
        chunkSize: MB,
        onChunkComplete: () => {
          url = upload.url!
          void upload.abort(true).then(resolve, reject)
        },
      })
    })
    expect(url).not.toBe('')
    // tus's termination answered 204 before the release finished; it follows right after.
    for (let i = 0; i < 50 && (await reserved()) !== before; i++) await new Promise((r) => setTimeout(r, 50))
    expect(await reserved()).toBe(before)
    const head = await fetch(url, { method: 'HEAD', headers: { 'tus-resumable': '1.0.0' } })
    expect(head.status).toBe(404)
    expect(existsSync(path.join(a.config.BLOB_DIR, '.tus', grant.pathname.split('/')[0]!))).toBe(false)
  })

  it('when a creation lacks the permission or declares another length, then it is refused in the envelope, and a permission makes one upload only', async () => {
    const grant = await permission(a, 'blob', 'rules.bin', 1000)
    const create = (headers: Record<string, string>) =>
      fetch(`${a.url}${grant.tus.endpoint}`, {
        method: 'POST',
        headers: { 'tus-resumable': '1.0.0', ...headers },
      })
    const noToken = await create({ 'upload-length': '1000' })
    expect(noToken.status).toBe(401)
    expect(((await noToken.json()) as { error: { code: string } }).error.code).toBe('upload_token_invalid')
    const longer = await create({ ...grant.tus.headers, 'upload-length': '1001' })
    expect(longer.status).toBe(413)
    const shorter = await create({ ...grant.tus.headers, 'upload-length': '999' })
    expect(shorter.status).toBe(400)
    expect(((await shorter.json()) as { error: { code: string } }).error.code).toBe('size_mismatch')
    const deferred = await create({ ...grant.tus.headers, 'upload-defer-length': '1' })
    expect(deferred.status).toBe(400)
    // One permission, one upload: of 8 creations at once, exactly one is made.
    const raced = await Promise.all(
      Array.from({ length: 8 }, () => create({ ...grant.tus.headers, 'upload-length': '1000' })),
    )
    expect(raced.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409])
    const ok = raced.find((r) => r.status === 201)!
    // The upload URL: the pathname and the server's tag of it (upload-ownership.test.ts).
    expect(ok.headers.get('location')).toBe(a.services.tus.uploadUrlOf('blob', grant.pathname))
    expect(ok.headers.get('location')).toMatch(/^\/api\/tus\/blob\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
    // The expiration extension: when the upload must be finished.
    expect(Date.parse(ok.headers.get('upload-expires')!)).toBeGreaterThan(Date.now())
    const again = await create({ ...grant.tus.headers, 'upload-length': '1000' })
    expect(again.status).toBe(409)
    // More bytes than Upload-Length are refused by tus.
    const patch = await fetch(new URL(ok.headers.get('location')!, a.url), {
      method: 'PATCH',
      headers: {
        'tus-resumable': '1.0.0',
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
      },
      body: new Uint8Array(1001),
    })
    expect(patch.status).toBe(413)
  })
})
