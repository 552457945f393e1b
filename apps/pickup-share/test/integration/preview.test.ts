import { createHash, randomBytes } from 'node:crypto'
import {
  api,
  type Harness,
  startHarness,
  testDeps,
  type UploadedFile,
  uploadFile,
} from '../support/harness.ts'

// Issue 25: previews are served from their own route, from an allow list of types, and a preview
// is this receiver's download of the file (README "Previews").
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')
const from = (ip: string) => ({ 'x-forwarded-for': ip })

async function share(files: Array<{ name: string; type: string; data: Buffer }>, maxDownloads: number) {
  const uploaded: UploadedFile[] = []
  for (const f of files) uploaded.push((await uploadFile(h, f)).file)
  const res = await api(h, 'POST', '/api/share', { files: uploaded, maxDownloads })
  expect(res.status).toBe(200)
  const code = res.body.code as string
  const url = (route: 'preview' | 'download', i = 0) =>
    `${h.url}/api/${route}?code=${code}&path=${encodeURIComponent(uploaded[i]!.pathname)}`
  return { code, token: res.body.token as string, files: uploaded, url }
}

async function get(url: string, headers: Record<string, string> = {}, method = 'GET') {
  const res = await fetch(url, { method, headers })
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) }
}

const remaining = async (code: string) => {
  const taken = await api(h, 'POST', '/api/take', { code })
  return taken.status === 410 ? 'used up' : (taken.body.remaining as number)
}

describe('GET /api/preview: headers', () => {
  it('when a text file is previewed, then it is text/plain; charset=utf-8, inline, nosniff, sandboxed, and the bytes are exact', async () => {
    const text = Buffer.from('héllo 你好 👋 <script>alert(1)</script>\n', 'utf8')
    const s = await share([{ name: 'note.txt', type: 'text/plain', data: text }], 5)
    const res = await get(s.url('preview'), from('10.25.0.1'))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    expect(res.headers.get('content-disposition')).toBe('inline; filename=note.txt')
    expect(res.headers.get('cache-control')).toBe('no-store')
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toMatch(/(^|; )sandbox($|;)/)
    expect(res.body.equals(text)).toBe(true)
  })

  it.each([
    ['photo.png', 'image/png', 'image/png'],
    ['photo.jpg', 'image/jpeg', 'image/jpeg'],
    ['anim.gif', 'image/gif', 'image/gif'],
    ['pic.webp', 'image/webp', 'image/webp'],
    ['pic.avif', 'image/avif', 'image/avif'],
    ['song.mp3', 'audio/mpeg', 'audio/mpeg'],
    ['clip.webm', 'video/webm', 'video/webm'],
    ['clip.mp4', 'video/mp4', 'video/mp4'],
    ['notes.txt', 'text/plain;charset=iso-8859-1', 'text/plain; charset=utf-8'],
  ])('when %s (%s) is previewed, then it is served as %s with a sandbox CSP', async (name, type, served) => {
    const s = await share([{ name, type, data: randomBytes(300) }], 5)
    const res = await get(s.url('preview'), from('10.25.0.2'))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe(served)
    expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'.*sandbox/)
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
  })

  it("when a PDF is previewed, then it is sandboxed too (Chromium's viewer runs there) and only this site may frame it", async () => {
    const s = await share([{ name: 'doc.pdf', type: 'application/pdf', data: randomBytes(300) }], 5)
    const res = await get(s.url('preview'), from('10.25.0.3'))
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/pdf')
    const csp = res.headers.get('content-security-policy')!
    expect(csp).toContain("default-src 'none'")
    expect(csp).toContain("frame-ancestors 'self'")
    expect(csp).toMatch(/(^|; )sandbox($|;)/)
  })

  it.each([
    ['page.html', 'text/html'],
    ['page.htm', 'text/html; charset=utf-8'],
    ['logo.svg', 'image/svg+xml'],
    ['feed.xml', 'application/xml'],
    ['app.js', 'text/javascript'],
    ['page.xhtml', 'application/xhtml+xml'],
    ['data.bin', 'application/octet-stream'],
  ])(
    'when %s (%s) is asked as a preview, then 415 preview_unavailable and nothing is spent; its download is an attachment of a safe type',
    async (name, type) => {
      const s = await share([{ name, type, data: Buffer.from('<script>alert(1)</script>') }], 1)
      const res = await get(s.url('preview'), from('10.25.0.4'))
      expect(res.status).toBe(415)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(JSON.parse(res.body.toString()).error.code).toBe('preview_unavailable')
      expect(await remaining(s.code)).toBe(1)
      const dl = await get(s.url('download'), from('10.25.0.4'))
      expect(dl.status).toBe(200)
      expect(dl.headers.get('content-disposition')).toMatch(/^attachment;/)
      expect(dl.headers.get('content-type')).toBe('application/octet-stream')
    },
  )

  it('when a file is above the admin size or previews are off, then 415 and nothing is spent', async () => {
    const s = await share([{ name: 'big.png', type: 'image/png', data: randomBytes(5000) }], 1)
    await h.services.settings.update({ previewMaxBytes: 4999 })
    try {
      const res = await get(s.url('preview'), from('10.25.0.5'))
      expect(res.status).toBe(415)
      expect(JSON.parse(res.body.toString()).error.details).toMatchObject({ reason: 'size' })
      await h.services.settings.update({ previewMaxBytes: 5000, previewEnabled: false })
      expect((await get(s.url('preview'), from('10.25.0.5'))).status).toBe(415)
      await h.services.settings.update({ previewEnabled: true })
      expect((await get(s.url('preview'), from('10.25.0.5'))).status).toBe(200)
    } finally {
      await h.services.settings.update({ previewEnabled: true, previewMaxBytes: 20_971_520 })
    }
  })

  it('when a wrong code asks for a preview, then 404 like a download, and a link token works too', async () => {
    const s = await share([{ name: 'a.txt', type: 'text/plain', data: Buffer.from('hi') }], 3)
    const wrong = await get(
      `${h.url}/api/preview?code=000000000000&path=${encodeURIComponent(s.files[0]!.pathname)}`,
      from('10.25.0.6'),
    )
    expect(wrong.status).toBe(404)
    const byLink = await get(
      `${h.url}/api/preview?token=${s.token}&path=${encodeURIComponent(s.files[0]!.pathname)}`,
      from('10.25.0.6'),
    )
    expect(byLink.status).toBe(200)
    expect(byLink.body.toString()).toBe('hi')
  })

  it('when a HEAD asks for a preview, then the headers come and nothing is spent', async () => {
    const s = await share([{ name: 'a.txt', type: 'text/plain', data: Buffer.from('hello') }], 1)
    const res = await get(s.url('preview'), from('10.25.0.7'), 'HEAD')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    expect(res.headers.get('content-length')).toBe('5')
    expect(await remaining(s.code)).toBe(1)
  })
})

describe("counting: a preview is this receiver's download of the file", () => {
  it('when a receiver previews, then one download is spent, and its Download of the file afterwards is free and byte-exact', async () => {
    const data = randomBytes(64 * 1024)
    const s = await share([{ name: 'pic.png', type: 'image/png', data }], 1)
    const me = from('10.26.0.1')
    const shown = await get(s.url('preview'), me)
    expect(shown.status).toBe(200)
    expect(sha(shown.body)).toBe(sha(data))
    expect(await remaining(s.code)).toBe('used up')
    // Someone else gets nothing: the share's only download was this receiver's.
    expect((await get(s.url('download'), from('10.26.0.2'))).status).toBe(410)
    expect((await get(s.url('preview'), from('10.26.0.2'))).status).toBe(410)
    const saved = await get(s.url('download'), me)
    expect(saved.status).toBe(200)
    expect(sha(saved.body)).toBe(sha(data))
    // Issue 42: the transfer stays open until its budget (3 × size) or its window ends: one more
    // copy for this receiver, then none for anyone.
    expect((await get(s.url('download'), me)).status).toBe(200)
    expect((await get(s.url('download'), me)).status).toBe(410)
    expect((await get(s.url('preview'), me)).status).toBe(410)
  })

  it('when a receiver previews again and again, then each download buys at most three copies (budget 2 × size + min(size, slack))', async () => {
    const size = 1000
    const data = randomBytes(size)
    const s = await share([{ name: 'clip.webm', type: 'video/webm', data }], 3)
    const me = from('10.26.1.1')
    let copies = 0
    for (let i = 0; i < 20; i++) {
      const res = await get(s.url('preview'), me)
      if (res.status !== 200) {
        expect(res.status).toBe(410)
        break
      }
      expect(res.body.equals(data)).toBe(true)
      copies++
    }
    // Budget per transfer (issue 42): 2 × size + min(size, 16 MiB) = 3,000 bytes: three copies each.
    expect(copies).toBe(9)
    expect(await remaining(s.code)).toBe('used up')
  })

  it('when 10 previews of one receiver race on a 2-download share, then exactly 6 bodies go out (3 a download) and the rest are 410 (used up)', async () => {
    const data = randomBytes(2000)
    const s = await share([{ name: 'pic.webp', type: 'image/webp', data }], 2)
    const me = from('10.26.2.1')
    const results = await Promise.all(Array.from({ length: 10 }, () => get(s.url('preview'), me)))
    const ok = results.filter((r) => r.status === 200)
    expect(ok).toHaveLength(6)
    for (const r of ok) expect(r.body.equals(data)).toBe(true)
    expect(results.filter((r) => r.status === 410)).toHaveLength(4)
    expect(await remaining(s.code)).toBe('used up')
  })

  it('when previews of one receiver race through two app instances (replicas on one Postgres, Redis and blob folder), then still exactly 6 bodies on a 2-download share', async () => {
    const other = await startHarness(deps, { config: { BLOB_DIR: h.config.BLOB_DIR } })
    try {
      const data = randomBytes(3000)
      const s = await share([{ name: 'pic.gif', type: 'image/gif', data }], 2)
      const me = from('10.26.6.1')
      // Across instances the opening row decides: a request whose instance waited 2 s for the
      // other's opening (a loaded machine) is told to come back (503 with Retry-After), and asks
      // again, as a client does.
      const results = await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const url = i % 2 ? s.url('preview') : s.url('preview').replace(h.url, other.url)
          let answer = await get(url, me)
          for (let tries = 0; answer.status === 503 && tries < 10; tries++) {
            expect(answer.headers.get('retry-after')).toMatch(/^\d+$/)
            await new Promise((resolve) => setTimeout(resolve, 200))
            answer = await get(url, me)
          }
          return answer
        }),
      )
      const ok = results.filter((r) => r.status === 200)
      expect(ok).toHaveLength(6)
      for (const r of ok) expect(r.body.equals(data)).toBe(true)
      expect(results.filter((r) => r.status === 410)).toHaveLength(4)
    } finally {
      await other.close()
    }
  })

  it('when 10 receivers preview at once on a 3-download share, then exactly 3 of them get it', async () => {
    const data = randomBytes(500)
    const s = await share([{ name: 'a.txt', type: 'text/plain', data }], 3)
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => get(s.url('preview'), from(`10.26.3.${i + 1}`))),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(3)
    expect(results.filter((r) => r.status === 410)).toHaveLength(7)
  })

  it('when a receiver downloads first, then a preview afterwards joins the open transfer (free, issue 42)', async () => {
    const data = randomBytes(800)
    const s = await share([{ name: 'a.txt', type: 'text/plain', data }], 2)
    const me = from('10.26.4.1')
    expect((await get(s.url('download'), me)).status).toBe(200)
    expect(await remaining(s.code)).toBe(1)
    expect((await get(s.url('preview'), me)).status).toBe(200)
    expect(await remaining(s.code)).toBe(1)
  })

  it('when a video preview is fetched in ranges (a media element seeking), then it stays one download', async () => {
    const data = randomBytes(10_000)
    const s = await share([{ name: 'clip.mp4', type: 'video/mp4', data }], 2)
    const me = from('10.26.5.1')
    const first = await get(s.url('preview'), { ...me, range: 'bytes=0-' })
    expect(first.status).toBe(206)
    expect(first.headers.get('content-range')).toBe('bytes 0-9999/10000')
    const seek = await get(s.url('preview'), { ...me, range: 'bytes=5000-' })
    expect(seek.status).toBe(206)
    expect(seek.body.equals(data.subarray(5000))).toBe(true)
    expect(await remaining(s.code)).toBe(1)
    const saved = await get(s.url('download'), me)
    expect(saved.status).toBe(200)
    expect(saved.body.equals(data)).toBe(true)
    expect(await remaining(s.code)).toBe(1)
  })
})
