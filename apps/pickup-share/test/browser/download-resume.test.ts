import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type Browser, chromium } from 'playwright-core'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'
import { startCutProxy } from '@quartet/core/testing/cut-proxy'
import { CHROMIUM, CHROMIUM_ARGS, describeBrowser, ensureWebBuilt, haveChromium } from './support.ts'

// Issue 42 in a real browser: Chromium downloads a file of a ONE-download share through the
// pickup page, the connection dies mid-way (a TCP hop the test controls cuts it), and the
// browser's download manager resumes it (Range + If-Range with the strong ETag). The file is
// exact and the share is used up by that one download.

jest.setTimeout(120_000)

const deps = testDeps()
let h: Harness
let browser: Browser | undefined

beforeAll(async () => {
  if (!haveChromium) return
  ensureWebBuilt()
  h = await startHarness(deps)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await h?.close()
})

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

describeBrowser("a browser's download, cut and resumed by its download manager", () => {
  it('when the connection of a pickup-page download dies at 40 %, then Chromium resumes it with If-Range, the file is exact and the one-download share is used up by it', async () => {
    const data = randomBytes(3 * 1024 * 1024)
    const { file } = await uploadFile(h, { name: 'film.bin', data, type: 'application/octet-stream' })
    const shared = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })
    expect(shared.status).toBe(200)
    const code = shared.body.code as string
    const proxy = await startCutProxy(
      { host: '127.0.0.1', port: Number(new URL(h.url).port) },
      Math.floor(data.length * 0.4),
      (head) => head.startsWith('GET /api/download?'),
    )
    const context = await browser!.newContext({ baseURL: proxy.url, acceptDownloads: true })
    try {
      const page = await context.newPage()
      await page.goto(`/pickup?code=${code}`)
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByTestId('download').click(),
      ])
      const saved = await download.path()
      expect(download.failure ? await download.failure() : null).toBeNull()
      expect(proxy.cut).toBe(true)
      expect(sha(readFileSync(saved))).toBe(sha(data))
      // The browser came back for the rest with a range and the file's strong ETag.
      const gets = proxy.requests.filter((r) => r.startsWith('GET /api/download?'))
      expect(gets.length).toBeGreaterThanOrEqual(2)
      const resume = gets[gets.length - 1]!
      expect(resume).toMatch(/\r\nrange: bytes=\d+-\r\n/i)
      expect(resume).toMatch(/\r\nif-range: "[\w-]{27}"\r\n/i)
      // One download: used up for everyone (another address gets 410).
      expect((await api(h, 'POST', '/api/take', { code })).status).toBe(410)
      const other = await fetch(
        `${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`,
        {
          headers: { 'x-forwarded-for': '198.51.100.61' },
        },
      )
      expect(other.status).toBe(410)
    } finally {
      await context.close()
      await proxy.close()
    }
  })
})
