import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync, statSync } from 'node:fs'
import path from 'node:path'
import { MemoryKeyValueStore } from '@quartet/core/kv'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// Issue 23 item 1: a permission's declared size is the size, enforced while the bytes arrive.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { kv: new MemoryKeyValueStore() })
})
afterAll(async () => {
  await h.close()
})

async function permission(size: number, name = 'f.bin', ip = '192.0.2.1') {
  return api(h, 'POST', '/api/upload', { store: 'blob', name, size }, { 'x-forwarded-for': ip })
}

/** A PUT with a body of `length` bytes, with Content-Length or streamed (chunked). */
async function put(
  grant: { body: { upload: { url: string; headers: Record<string, string> } } },
  length: number,
  chunked: boolean,
) {
  const data = new Uint8Array(randomBytes(length))
  const body = chunked
    ? new ReadableStream({
        start(c) {
          for (let i = 0; i < data.length; i += 1000) c.enqueue(data.subarray(i, i + 1000))
          c.close()
        },
      })
    : data
  const res = await fetch(new URL(grant.body.upload.url, h.url), {
    method: 'PUT',
    headers: grant.body.upload.headers,
    body,
    ...(chunked ? { duplex: 'half' } : {}),
  } as RequestInit).catch((err: unknown) => ({ status: 0, err }) as const)
  if ('err' in res) return { status: 0, code: String(res.err) }
  const text = await res.text()
  return {
    status: res.status,
    code: text ? (JSON.parse(text) as { error?: { code: string } }).error?.code : '',
  }
}

const tmpFiles = () => {
  const dir = path.join(h.config.BLOB_DIR, '.tmp')
  return existsSync(dir) ? readdirSync(dir) : []
}

const storedFiles = () => {
  const files: Array<{ file: string; size: number }> = []
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue
      const full = path.join(dir, e.name)
      if (e.isDirectory()) walk(full)
      else files.push({ file: full, size: statSync(full).size })
    }
  }
  walk(h.config.BLOB_DIR)
  return files
}

describe('blob uploads are exactly their declared size', () => {
  it.each([
    ['with Content-Length', false],
    ['chunked', true],
  ])(
    'when the body %s is longer than declared, then 413 file_too_large and nothing is kept',
    async (_, chunked) => {
      const grant = await permission(5, 'five.bin')
      // The report of issue 23: {"size":5}, then 10 bytes → 201 {"size":10}.
      expect(await put(grant, 10, chunked)).toEqual({ status: 413, code: 'file_too_large' })
      expect(await put(grant, 50_000, chunked)).toEqual({ status: 413, code: 'file_too_large' })
      const shared = await api(h, 'POST', '/api/share', {
        files: [
          {
            name: 'five.bin',
            size: 5,
            type: 'application/octet-stream',
            pathname: grant.body.pathname,
            proof: grant.body.proof,
            store: 'blob',
          },
        ],
      })
      expect(shared.body.error.code).toBe('upload_missing')
      expect(tmpFiles()).toEqual([])
    },
  )

  it.each([
    ['with Content-Length', false],
    ['chunked', true],
  ])(
    'when the body %s is shorter than declared, then 400 size_mismatch and nothing is kept',
    async (_, chunked) => {
      const grant = await permission(5000, 'short.bin')
      expect(await put(grant, 4999, chunked)).toEqual({ status: 400, code: 'size_mismatch' })
      // The permission is still good for the right body.
      expect(await put(grant, 5000, chunked)).toEqual({ status: 201, code: undefined })
    },
  )

  it('when the declared size is 0, then only an empty body is taken', async () => {
    const grant = await permission(0, 'empty.txt')
    expect((await put(grant, 1, false)).status).toBe(413)
    expect((await put(grant, 0, false)).status).toBe(201)
  })

  it('when a share lists a size other than the permission declared, then 400 size_mismatch', async () => {
    const { file } = await uploadFile(h, { name: 'ok.bin', data: randomBytes(100) })
    const res = await api(h, 'POST', '/api/share', { files: [{ ...file, size: 99 }] })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('size_mismatch')
    expect((await api(h, 'POST', '/api/share', { files: [file] })).status).toBe(200)
  })
})

describe('the quota is never exceeded', () => {
  it('when 24 permissions race for the last free bytes and half of them send oversize bodies, then freeBytes stays >= 0 and the stored bytes stay within the quota', async () => {
    const instance = async () => (await h.services.instances.list()).find((i) => i.name === 'blob')!
    const before = await instance()
    const storedBefore = storedFiles().reduce((n, f) => n + f.size, 0)
    // Room for exactly 4 files of 10 kB beyond what is held already.
    const quota = before.usedBytes + before.reservedBytes + 40_000
    await h.services.instances.upsert({ name: 'blob', quotaBytes: quota })
    try {
      const grants = await Promise.all(
        Array.from({ length: 24 }, (_, i) => permission(10_000, `q-${i}.bin`, `198.51.100.${i + 1}`)),
      )
      const granted = grants.filter((g) => g.status === 200)
      expect(granted).toHaveLength(4)
      for (const g of grants.filter((x) => x.status !== 200)) expect(g.body.error.code).toBe('store_full')

      // Every holder tries to store more than it declared (fixed length and chunked), some at once.
      const oversize = await Promise.all(
        granted.flatMap((g) => [put(g, 10_001, false), put(g, 3_000_000, true), put(g, 10_000 * 50, false)]),
      )
      for (const r of oversize) expect([413, 0]).toContain(r.status)
      const exact = await Promise.all(granted.map((g) => put(g, 10_000, true)))
      expect(exact.map((r) => r.status)).toEqual([201, 201, 201, 201])
      const shares = await Promise.all(
        granted.map((g, i) =>
          api(h, 'POST', '/api/share', {
            files: [
              {
                name: `q-${i}.bin`,
                size: 10_000,
                type: 'application/octet-stream',
                pathname: g.body.pathname,
                proof: g.body.proof,
                store: 'blob',
              },
            ],
          }),
        ),
      )
      expect(shares.map((s) => s.status)).toEqual([200, 200, 200, 200])

      const after = await instance()
      expect(after.freeBytes).toBeGreaterThanOrEqual(0)
      expect(after.usedBytes + after.reservedBytes).toBeLessThanOrEqual(quota)
      const stored = storedFiles().reduce((n, f) => n + f.size, 0)
      expect(stored - storedBefore).toBeLessThanOrEqual(40_000)
      expect(stored).toBeLessThanOrEqual(quota)
      // Nothing is left in flight either.
      expect(tmpFiles()).toEqual([])
      // And no further permission fits.
      expect((await permission(1, 'one-more.bin', '198.51.100.200')).status).toBe(507)
    } finally {
      await h.services.instances.upsert({ name: 'blob', quotaBytes: null })
    }
  })
})
