import { createHash, randomBytes } from 'node:crypto'
import {
  createReadStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { type Entry, fromBuffer, type ZipFile } from 'yauzl'
import { captureLogger } from '@quartet/core/testing'
import { startCutProxy } from '@quartet/core/testing/cut-proxy'
import {
  ADMIN_PASSWORD,
  adminLogin,
  api,
  type Harness,
  startHarness,
  testDeps,
  uploadFile,
} from '../support/harness.ts'
import { bodyKeys, RECORD_SIZE } from '../../web/src/crypto/ece.ts'
import { EncryptedSource } from '../../web/src/crypto/encrypted-source.ts'
import { shareEncryption } from '../../web/src/crypto/keys.ts'
import { CuttingProxy, targetOf, writeGeneratedFile } from '../support/tus.ts'
import {
  axeSerious,
  CHROMIUM,
  CHROMIUM_ARGS,
  describeBrowser,
  ensureWebBuilt,
  haveChromium,
  SCREENSHOT_DIR,
  tinyPdf,
} from './support.ts'
const ece = require('http_ece') as {
  decrypt(buffer: Buffer, params: { version: string; key: string }): Buffer
}

// Issue 47 item 2 in a real browser: a sender encrypts several files (one of tens of MB) and a
// text on the send page; the upload is cut by a proxy and resumed; a receiver in another browser
// context opens the link (the key in its fragment), and every file lands on disk byte-identical,
// decrypted by the service worker. The server's stored objects and its log never hold the key or
// a plaintext byte (a marker string in every plaintext), and a body the browser wrote decrypts
// with http_ece, another implementation of RFC 8188.

jest.setTimeout(240_000)

const MB = 1024 * 1024
const MARKER = 'PLAINTEXT-MARKER-47-e2e'
const deps = testDeps()
const log = captureLogger()
let h: Harness
let proxy: CuttingProxy
let browser: Browser
let tmp: string
const pageErrors: string[] = []
const urls: string[] = []
const bodies: string[] = []

beforeAll(async () => {
  if (!haveChromium) return
  ensureWebBuilt()
  tmp = mkdtempSync(path.join(os.tmpdir(), 'e2e-browser-'))
  h = await startHarness(deps, { logger: log.logger })
  proxy = await new CuttingProxy(targetOf(h.url)).start()
  proxy.bytesPerSecond = 16 * MB
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await proxy?.close()
  await h?.close()
  if (tmp) rmSync(tmp, { recursive: true, force: true })
})

async function newPage(baseURL = h.url, locale = 'en-US'): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ baseURL, locale, acceptDownloads: true })
  const page = await context.newPage()
  page.on('request', (req) => {
    urls.push(req.url())
    // Every body the pages send but the uploads' own (ciphertext, checked where it is stored).
    if (req.method() !== 'PATCH' && req.method() !== 'PUT') bodies.push(req.postData() ?? '')
  })
  page.on('pageerror', (err) => pageErrors.push(`page error: ${err.message}`))
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text())
  })
  return { context, page }
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

/** A file of `size` bytes with the marker in it, at its start, its middle and its end. */
function markedFile(name: string, size: number): { file: string; data: Buffer } {
  const data = randomBytes(size)
  for (const at of [0, Math.floor(size / 2), size - MARKER.length]) data.write(MARKER, at)
  const file = path.join(tmp, name)
  writeFileSync(file, data)
  return { file, data }
}

/** Every file the server stored (blob folder, tus' partial files included). */
function storedFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile())
}

/**
 * Saves what the next download of the page brings, returns its name and bytes. When none comes,
 * the error says what the page showed (its alerts) and what the server last answered.
 */
async function download(page: Page, click: () => Promise<void>): Promise<{ name: string; data: Buffer }> {
  const from = log.lines.length
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 150_000 }), click()]).catch(
    async (err: Error) => {
      const alerts = await page
        .locator('[role="alert"]')
        .allTextContents()
        .catch(() => [])
      const answers = log.lines
        .slice(from)
        .filter((l) => l.req && l.res)
        .slice(-20)
        .map((l) => {
          const { req, res, responseTime } = l as {
            req: { method: string; url: string }
            res: { statusCode: number }
            responseTime: number
          }
          return `${req.method} ${req.url} → ${res.statusCode} (${responseTime} ms)`
        })
      const errors = log.lines
        .slice(from)
        .filter((l) => l.level === 50)
        .map((l) => String(l.msg))
      throw new Error(
        `${err.message}\npage alerts: ${JSON.stringify(alerts)}\nserver answers since the click:\n  ${answers.join('\n  ')}\nserver errors: ${JSON.stringify(errors)}`,
        { cause: err },
      )
    },
  )
  const to = path.join(tmp, `dl-${randomBytes(4).toString('hex')}`)
  await dl.saveAs(to)
  return { name: dl.suggestedFilename(), data: readFileSync(to) }
}

/**
 * A one-file share encrypted as the send page does it (aes128gcm body, names sealed with the
 * key): returns the key material, the ciphertext uploaded, and POST /api/share's answer.
 */
async function encryptedShare(data: Buffer, plain: { name: string; type: string }, maxDownloads: number) {
  const ikm = new Uint8Array(randomBytes(16))
  const keys = await bodyKeys(ikm, new Uint8Array(randomBytes(16)), RECORD_SIZE)
  const source = new EncryptedSource(new Blob([new Uint8Array(data)]), keys)
  const body = Buffer.from(await source.bytes(0, source.size))
  const { file } = await uploadFile(h, { name: 'encrypted-1.bin', data: body })
  const encryption = await shareEncryption(ikm, [plain])
  const shared = await api(h, 'POST', '/api/share', { files: [file], maxDownloads, encryption })
  expect(shared.status).toBe(200)
  return { ikm, body, shared }
}

describeBrowser('an end-to-end encrypted share in the browser (chromium)', () => {
  it('when a sender encrypts files and a text and the upload is cut, then it resumes, and the receiver of the link gets every file byte-identical while the server never sees a plaintext byte or the key', async () => {
    const big = markedFile('holiday video.mp4', 24 * MB + 12_345)
    const small = markedFile('notes — café.txt', 40_000)
    const text = `${MARKER} hello 你好 🙂`
    const sender = await newPage(proxy.url)
    await sender.page.goto('/')
    await sender.page.getByTestId('file-input').setInputFiles([big.file, small.file])
    await sender.page.locator('#share-text').fill(text)
    await sender.page.getByTestId('e2e-on').check()
    await expect(sender.page.getByTestId('e2e-mode-link').isChecked()).resolves.toBe(true)
    const cutsBefore = proxy.cuts
    proxy.cutAfter(10 * MB)
    await sender.page.getByTestId('send-submit').click()
    await sender.page.getByTestId('pickup-code').waitFor({ timeout: 120_000 })
    expect(proxy.cuts).toBe(cutsBefore + 1)
    const link = (await sender.page.getByTestId('pickup-link').textContent())!.trim()
    await expect(sender.page.getByTestId('result-encrypted').isVisible()).resolves.toBe(true)
    await sender.context.close()
    const fragment = new URL(link).hash
    const key = new URLSearchParams(fragment.split('&').slice(1).join('&')).get('k')!
    expect(key).toMatch(/^[A-Za-z0-9_-]{22}$/)
    const token = fragment.slice(1).split('&')[0]!

    // What the server has: placeholders, ciphertext sizes, the encryption's parameters.
    const taken = await api(h, 'POST', '/api/take', { token })
    expect(taken.status).toBe(200)
    const files = taken.body.manifest.files as Array<{
      name: string
      size: number
      path: string
      type: string
    }>
    expect(files.map((f) => f.name)).toEqual(['encrypted-1.bin', 'encrypted-2.bin', 'encrypted-3.bin'])
    expect(files.every((f) => f.type === 'application/octet-stream')).toBe(true)
    expect(taken.body.encryption).toMatchObject({ scheme: 'aes128gcm', key: 'link', recordSize: 65_536 })
    const admin = await adminLogin(h)
    const listed = await api(h, 'GET', '/api/admin/shares', undefined, admin)
    expect(listed.body.items[0].encrypted).toBe(true)

    // The ciphertext as the server serves it decrypts with http_ece to the very file.
    const res = await fetch(`${h.url}/api/download?token=${token}&path=${encodeURIComponent(files[1]!.path)}`)
    const body = Buffer.from(await res.arrayBuffer())
    expect(body.length).toBe(files[1]!.size)
    expect(sha(ece.decrypt(body, { version: 'aes128gcm', key }))).toBe(sha(small.data))

    // The receiver: the link opens the share, the names are decrypted, every file lands intact.
    const receiver = await newPage()
    const { page } = receiver
    await page.goto(new URL(link).pathname + fragment)
    await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    const names = await page.locator('[data-testid="manifest"] .file-name').allTextContents()
    expect(names.slice(0, 2)).toEqual(['holiday video.mp4', 'notes — café.txt'])
    expect(names[2]).toMatch(/^text-.*\.txt$/)
    const buttons = page.getByTestId('download')
    const got = []
    for (let i = 0; i < 3; i++) {
      got.push(await download(page, () => buttons.nth(i).click()))
      await page.waitForTimeout(300)
    }
    expect(got.map((g) => g.name)).toEqual(names)
    expect(sha(got[0]!.data)).toBe(sha(big.data))
    expect(sha(got[1]!.data)).toBe(sha(small.data))
    expect(got[2]!.data.toString('utf8')).toBe(text)

    // Nothing the server holds or logged has a plaintext byte or the key.
    const keyBytes = Buffer.from(key, 'base64url')
    const stored = storedFiles(h.config.BLOB_DIR)
    expect(stored.length).toBeGreaterThanOrEqual(3)
    for (const f of stored) {
      const bytes = readFileSync(f)
      expect(bytes.includes(MARKER)).toBe(false)
      expect(bytes.includes(keyBytes)).toBe(false)
      expect(bytes.includes(key)).toBe(false)
    }
    const logged = JSON.stringify(log.lines)
    expect(logged.includes(MARKER)).toBe(false)
    expect(logged.includes(key)).toBe(false)
    expect(logged.includes('holiday')).toBe(false)
    // The key never left the browsers: no request carried it.
    expect(urls.some((u) => u.includes(key))).toBe(false)
    // The bodies were seen (the placeholder names went to /api/upload), and none had a secret.
    expect(bodies.some((b) => b.includes('"name":"encrypted-1.bin"'))).toBe(true)
    expect(bodies.some((b) => b.includes(key) || b.includes(MARKER) || b.includes('holiday'))).toBe(false)
    expect(pageErrors).toEqual([])
    await receiver.context.close()
  })

  it('when a share is encrypted with a passphrase, then the receiver types the code and the passphrase (a wrong one is said at the field) and gets the file and a zip of all', async () => {
    const one = markedFile('report.pdf', 300_000)
    const two = markedFile('Report.pdf', 1000)
    const sender = await newPage()
    await sender.page.goto('/')
    await sender.page.getByTestId('file-input').setInputFiles([one.file, two.file])
    await sender.page.getByTestId('e2e-on').check()
    await sender.page.getByTestId('e2e-mode-passphrase').check()
    await sender.page.getByTestId('e2e-passphrase').fill('horse battery 47 staple')
    await sender.page.screenshot({
      path: path.join(SCREENSHOT_DIR, 'send-encrypted-1280-light.png'),
      fullPage: true,
    })
    await sender.page.getByTestId('send-submit').click()
    await sender.page.getByTestId('pickup-code').waitFor({ timeout: 60_000 })
    const code = (await sender.page.getByTestId('pickup-code').textContent())!.trim()
    const link = (await sender.page.getByTestId('pickup-link').textContent())!.trim()
    expect(link).not.toContain('&k=')
    await sender.context.close()

    const { page, context } = await newPage()
    await page.goto('/pickup')
    await page.getByTestId('code-input').fill(code)
    await page.getByTestId('open').click()
    const field = page.getByTestId('e2e-passphrase-input')
    await field.fill('wrong passphrase')
    await page.getByTestId('e2e-decrypt').click()
    await expect(page.getByTestId('e2e-problem').textContent({ timeout: 30_000 })).resolves.toBe(
      'That passphrase does not decrypt this share. Check it and try again.',
    )
    await field.fill('horse battery 47 staple')
    await page.getByTestId('e2e-decrypt').click()
    await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    await page.screenshot({
      path: path.join(SCREENSHOT_DIR, 'pickup-encrypted-1280-light.png'),
      fullPage: true,
    })
    const first = await download(page, () => page.getByTestId('download').first().click())
    expect(first.name).toBe('report.pdf')
    expect(sha(first.data)).toBe(sha(one.data))
    await page.waitForTimeout(300)
    const zip = await download(page, () => page.getByTestId('e2e-download-all').click())
    expect(zip.name).toBe(`pickup-${code}.zip`)
    const entries = await unzip(zip.data)
    expect(Object.keys(entries)).toEqual(['report.pdf', 'Report (2).pdf'])
    expect(sha(entries['report.pdf']!)).toBe(sha(one.data))
    expect(sha(entries['Report (2).pdf']!)).toBe(sha(two.data))
    expect(pageErrors).toEqual([])
    await context.close()

    // The admin's list marks the share as encrypted; its names are the placeholders only.
    const adminPage = await newPage()
    await adminPage.page.goto('/admin')
    await adminPage.page.getByTestId('password').fill(ADMIN_PASSWORD)
    await adminPage.page.getByTestId('login').click()
    await adminPage.page.getByTestId('shares-table').waitFor()
    const row = adminPage.page.getByTestId('shares-table').locator('tr', { hasText: code })
    await expect(row.getByTestId('encrypted-badge').textContent()).resolves.toBe('encrypted')
    await expect(row.textContent()).resolves.not.toContain('report')
    await adminPage.context.close()
  })
  it('when the receiver of an encrypted share with a password shows its text, image and PDF, then they are decrypted in the browser (text as text, the image and the PDF viewer in a sandboxed frame), and the page passes axe in English and Chinese', async () => {
    const png = await pngBytes()
    const note = `${MARKER} <b>not markup</b> 你好`
    const sender = await newPage()
    await sender.page.goto('/')
    await sender.page.getByTestId('file-input').setInputFiles([
      { name: 'dot.png', mimeType: 'image/png', buffer: png },
      { name: 'note.txt', mimeType: 'text/plain', buffer: Buffer.from(note) },
      { name: 'doc.pdf', mimeType: 'application/pdf', buffer: tinyPdf() },
    ])
    await sender.page.getByTestId('e2e-on').check()
    // A password too: the server asks for it before the page can decrypt anything.
    await sender.page.getByLabel('Password (optional)').fill('pass-47-word')
    for (const v of await axeSerious(sender.page)) throw new Error(v)
    await sender.page.getByTestId('send-submit').click()
    await sender.page.getByTestId('pickup-code').waitFor({ timeout: 60_000 })
    const code = (await sender.page.getByTestId('pickup-code').textContent())!.trim()
    const link = (await sender.page.getByTestId('pickup-link').textContent())!.trim()
    await sender.context.close()

    const { page, context } = await newPage()
    await page.goto(new URL(link).pathname + new URL(link).hash)
    await page.getByTestId('password-input').fill('pass-47-word')
    await page.getByTestId('unlock').click()
    await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    for (const v of await axeSerious(page)) throw new Error(v)
    const shows = page.getByTestId('e2e-show')
    await expect(shows.count()).resolves.toBe(3)
    await page.getByRole('button', { name: 'Show note.txt (counts as your download of it)' }).click()
    const text = page.getByTestId('e2e-preview-text')
    await text.waitFor({ timeout: 30_000 })
    await expect(text.textContent()).resolves.toBe(note)
    await expect(text.locator('b').count()).resolves.toBe(0)
    await page.getByRole('button', { name: 'Show dot.png (counts as your download of it)' }).click()
    const frame = page.frameLocator('[data-testid="e2e-preview-frame"]')
    const imgWidth = () =>
      frame.locator('img').evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)
    await until(imgWidth, 32)
    // Chromium's PDF viewer (an extension frame) opens inside the worker's sandboxed frame.
    await page.getByRole('button', { name: 'Show doc.pdf (counts as your download of it)' }).click()
    const viewer = () =>
      page
        .frames()
        .some(
          (f) => f.url().startsWith('chrome-extension://') && !!f.parentFrame()?.url().includes('/e2e-dl/'),
        )
    for (let i = 0; i < 50 && !viewer(); i++) await page.waitForTimeout(200)
    expect(viewer()).toBe(true)
    await until(async () => (await page.getByTestId('remaining').textContent())!.trim(), '7')
    expect(pageErrors).toEqual([])
    await context.close()

    // Chinese: the link without its key says, in Chinese, to open the full link.
    const zh = await newPage(h.url, 'zh-CN')
    await zh.page.goto(new URL(link).pathname + new URL(link).hash.split('&')[0])
    await zh.page.getByTestId('password-input').fill('pass-47-word')
    await zh.page.getByTestId('unlock').click()
    await expect(zh.page.getByTestId('e2e-problem').textContent({ timeout: 30_000 })).resolves.toBe(
      '此分享已加密，密钥只在取件链接中。请打开对方发给你的完整链接。',
    )
    for (const v of await axeSerious(zh.page)) throw new Error(v)
    expect(code).toMatch(/^\d+$/)
    await zh.context.close()
  })
  it('when the receiver of an encrypted share shows its audio and its video, then the page decrypts each and plays it from memory in its own player', async () => {
    const wav = wavBytes(0.5)
    const webm = await webmBytes()
    const sender = await newPage()
    await sender.page.goto('/')
    await sender.page.getByTestId('file-input').setInputFiles([
      { name: 'sound.wav', mimeType: 'audio/wav', buffer: wav },
      { name: 'clip.webm', mimeType: 'video/webm', buffer: webm },
    ])
    await sender.page.getByTestId('e2e-on').check()
    await sender.page.getByTestId('send-submit').click()
    await sender.page.getByTestId('pickup-link').waitFor({ timeout: 60_000 })
    const link = (await sender.page.getByTestId('pickup-link').textContent())!.trim()
    await sender.context.close()

    const { page, context } = await newPage()
    await page.goto(new URL(link).pathname + new URL(link).hash)
    await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    await page.getByRole('button', { name: 'Show sound.wav (counts as your download of it)' }).click()
    const audio = page.getByTestId('e2e-preview-audio')
    await until(() => audio.evaluate((a) => (a as unknown as { duration: number }).duration), 0.5)
    await expect(audio.getAttribute('src')).resolves.toMatch(/^blob:/)
    await page.getByRole('button', { name: 'Show clip.webm (counts as your download of it)' }).click()
    const video = page.getByTestId('e2e-preview-video')
    await until(() => video.evaluate((v) => (v as unknown as { videoWidth: number }).videoWidth), 32)
    for (const v of await axeSerious(page)) throw new Error(v)
    expect(pageErrors).toEqual([])
    await context.close()
  })

  it('when the connection of an encrypted download dies at 40 %, then the service worker resumes it with Range and If-Range, the file is exact and the one-download share is used up by it', async () => {
    const data = randomBytes(3 * MB)
    const { ikm, body, shared } = await encryptedShare(
      data,
      { name: 'film.mkv', type: 'video/x-matroska' },
      1,
    )
    const proxy = await startCutProxy(targetOf(h.url), Math.floor(body.length * 0.4), (head) =>
      head.startsWith('GET /api/download?'),
    )
    const { page, context } = await newPage(proxy.url)
    try {
      await page.goto(`/pickup#${shared.body.token}&k=${Buffer.from(ikm).toString('base64url')}`)
      await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
      const got = await download(page, () => page.getByTestId('download').click())
      expect(got.name).toBe('film.mkv')
      expect(proxy.cut).toBe(true)
      expect(sha(got.data)).toBe(sha(data))
      const gets = proxy.requests.filter((r) => r.startsWith('GET /api/download?'))
      expect(gets.length).toBe(2)
      expect(gets[1]).toMatch(/\r\nrange: bytes=\d+-\r\n/i)
      expect(gets[1]).toMatch(/\r\nif-range: "[\w-]{27}"\r\n/i)
      // One download: used up for everyone.
      expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).status).toBe(410)
      // The page says so: no Download button left, the file marked used up.
      await until(async () => (await page.getByTestId('remaining').textContent())!.trim(), '0')
      await expect(page.getByTestId('download').count()).resolves.toBe(0)
    } finally {
      await context.close()
      await proxy.close()
    }
  })
  it('when the server is busy for the worker’s first request of a download (503, Retry-After), then the worker asks again and the file lands exact, counted once', async () => {
    const data = randomBytes(200_000)
    const { ikm, shared } = await encryptedShare(
      data,
      { name: 'busy.bin', type: 'application/octet-stream' },
      2,
    )
    // A hop that answers the first GET of the file as a busy server does, and passes the rest.
    const target = targetOf(h.url)
    const gets: number[] = []
    const busy = http.createServer((req, res) => {
      if (req.method === 'GET' && req.url?.startsWith('/api/download?')) {
        gets.push(Date.now())
        if (gets.length === 1) {
          res.writeHead(503, { 'Content-Type': 'application/json', 'Retry-After': '1' })
          res.end(JSON.stringify({ error: { code: 'service_unavailable', message: 'busy; try again' } }))
          return
        }
      }
      const up = http.request(
        { host: target.host, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers)
          answer.pipe(res)
        },
      )
      up.on('error', () => res.destroy())
      req.pipe(up)
    })
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const { page, context } = await newPage(`http://127.0.0.1:${(busy.address() as AddressInfo).port}`)
    try {
      await page.goto(`/pickup#${shared.body.token}&k=${Buffer.from(ikm).toString('base64url')}`)
      await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
      const got = await download(page, () => page.getByTestId('download').click())
      expect(got.name).toBe('busy.bin')
      expect(sha(got.data)).toBe(sha(data))
      expect(gets.length).toBe(2)
      // Asked again after the Retry-After it was given.
      expect(gets[1]! - gets[0]!).toBeGreaterThanOrEqual(900)
      // The 503 spent nothing: one download of two is left.
      const taken = await api(h, 'POST', '/api/take', { code: shared.body.code })
      expect(taken.status).toBe(200)
      expect(taken.body.remaining).toBe(1)
    } finally {
      await context.close()
      const closed = new Promise((resolve) => busy.close(resolve))
      busy.closeAllConnections()
      await closed
    }
  })
  it('when the page is reloaded mid-way through an encrypted upload and the same file is picked again, then it resumes from the server offset with the same key and the receiver gets it intact', async () => {
    const big = markedFile('film.mkv', 40 * MB + 777)
    const { page, context } = await newPage(proxy.url)
    await page.goto('/')
    await page.getByTestId('file-input').setInputFiles(big.file)
    await page.getByTestId('e2e-on').check()
    await page.getByTestId('send-submit').click()
    for (let i = 0; i < 600; i++) {
      const bar = page.getByTestId('progress').first()
      const done =
        Number(await bar.getAttribute('value').catch(() => 0)) / Number(await bar.getAttribute('max'))
      if (done >= 0.3) break
      await page.waitForTimeout(50)
    }
    const sentBeforeReload = proxy.upstreamBytes
    await page.reload()
    await page.getByTestId('file-input').setInputFiles(big.file)
    await page.getByTestId('resumes').waitFor()
    await page.getByTestId('e2e-on').check()
    const patches: Array<Record<string, string>> = []
    page.on('request', (r) => {
      if (r.method() === 'PATCH') patches.push(r.headers())
    })
    await page.getByTestId('send-submit').click()
    await page.getByTestId('pickup-code').waitFor({ timeout: 120_000 })
    const link = (await page.getByTestId('pickup-link').textContent())!.trim()
    // Resumed, not restarted: the first PATCH began where the server had stopped, and what is sent
    // after the reload is well below the whole body.
    expect(Number(patches[0]!['upload-offset'])).toBeGreaterThan(8 * MB)
    expect(proxy.upstreamBytes - sentBeforeReload).toBeLessThan(big.data.length - 8 * MB)
    // Nothing of the key is left behind in the sender's storage once the upload is done.
    const left = await page.evaluate(
      'Object.keys(localStorage).filter((k) => k.startsWith("pickup-share:e2e:"))',
    )
    expect(left).toEqual([])
    await context.close()

    const receiver = await newPage()
    await receiver.page.goto(new URL(link).pathname + new URL(link).hash)
    await receiver.page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    const got = await download(receiver.page, () => receiver.page.getByTestId('download').click())
    expect(got.name).toBe('film.mkv')
    expect(sha(got.data)).toBe(sha(big.data))
    await receiver.context.close()
  })
  it('when a 256 MB file is encrypted on its way up and decrypted on its way down, then no page or worker process of the browser grows by anything near its size', async () => {
    const size = 256 * MB
    const file = path.join(tmp, 'big.bin')
    const fileSha = await writeGeneratedFile(file, size, 47)
    const cdp = await browser.newBrowserCDPSession()
    /** The resident memory of every renderer (pages and the service worker), by pid. */
    const renderers = async () => {
      const { processInfo } = (await cdp.send('SystemInfo.getProcessInfo')) as {
        processInfo: Array<{ type: string; id: number }>
      }
      const rss = new Map<number, number>()
      for (const p of processInfo.filter((x) => x.type === 'renderer')) {
        const status = readFileSync(`/proc/${p.id}/status`, 'utf8')
        rss.set(p.id, Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024)
      }
      return rss
    }
    /** The most any renderer grew over its first sample while `run` went on. */
    const peakGrowth = async (run: () => Promise<void>) => {
      const base = await renderers()
      let peak = 0
      let going = true
      const sampler = (async () => {
        while (going) {
          for (const [pid, rss] of await renderers()) peak = Math.max(peak, rss - (base.get(pid) ?? rss))
          await new Promise((r) => setTimeout(r, 100))
        }
      })()
      try {
        await run()
      } finally {
        going = false
        await sampler
      }
      return peak
    }

    const sender = await newPage()
    await sender.page.goto('/')
    await sender.page.getByTestId('file-input').setInputFiles(file)
    await sender.page.getByTestId('e2e-on').check()
    const up = await peakGrowth(async () => {
      await sender.page.getByTestId('send-submit').click()
      await sender.page.getByTestId('pickup-code').waitFor({ timeout: 300_000 })
    })
    const link = (await sender.page.getByTestId('pickup-link').textContent())!.trim()
    await sender.context.close()

    const { page, context } = await newPage()
    await page.goto(new URL(link).pathname + new URL(link).hash)
    await page.getByTestId('e2e-note').waitFor({ timeout: 30_000 })
    let saved = ''
    const down = await peakGrowth(async () => {
      const [dl] = await Promise.all([
        page.waitForEvent('download', { timeout: 60_000 }),
        page.getByTestId('download').click(),
      ])
      saved = path.join(tmp, 'big-down.bin')
      await dl.saveAs(saved)
    })
    await context.close()
    await cdp.detach()
    const hash = createHash('sha256')
    for await (const chunk of createReadStream(saved)) hash.update(chunk as Buffer)
    expect(hash.digest('hex')).toBe(fileSha)
    // Holding the file (or its ciphertext) would add its 256 MB or more. Streaming adds what is in
    // flight and what the collector has not taken back yet: about 90-125 MB were seen each way, the
    // same with a 512 MB file (flat: it does not grow with the file).
    expect(up).toBeLessThan(0.7 * size)
    expect(down).toBeLessThan(0.7 * size)
  })
})

/** Every entry of a ZIP by name (read with yauzl, which checks the CRCs and the sizes). */
async function unzip(data: Buffer): Promise<Record<string, Buffer>> {
  const archive = await new Promise<ZipFile>((resolve, reject) =>
    fromBuffer(data, { lazyEntries: true, validateEntrySizes: true }, (err, z) =>
      err ? reject(err) : resolve(z),
    ),
  )
  const out: Record<string, Buffer> = {}
  await new Promise<void>((resolve, reject) => {
    archive.on('entry', (entry: Entry) => {
      archive.openReadStream(entry, (err, stream) => {
        if (err) return reject(err)
        const parts: Buffer[] = []
        stream.on('data', (c: Buffer) => parts.push(c))
        stream.on('error', reject)
        stream.on('end', () => {
          out[entry.fileName] = Buffer.concat(parts)
          archive.readEntry()
        })
      })
    })
    archive.on('error', reject)
    archive.on('end', () => resolve())
    archive.readEntry()
  })
  return out
}

/** A real PNG (32 × 32), drawn by Chromium's canvas. */
async function pngBytes(): Promise<Buffer> {
  const page = await browser.newPage()
  const b64 = (await page.evaluate(
    "(() => { const c = document.createElement('canvas'); c.width = 32; c.height = 32; c.getContext('2d').fillRect(0, 0, 32, 32); return c.toDataURL('image/png').split(',')[1] })()",
  )) as string
  await page.close()
  return Buffer.from(b64, 'base64')
}

/** A WAV file of `seconds` of a 440 Hz tone (8 kHz, 16-bit mono PCM). */
function wavBytes(seconds: number): Buffer {
  const rate = 8000
  const samples = Math.round(rate * seconds)
  const wav = Buffer.alloc(44 + samples * 2)
  wav.write('RIFF', 0)
  wav.writeUInt32LE(36 + samples * 2, 4)
  wav.write('WAVEfmt ', 8)
  wav.writeUInt32LE(16, 16)
  wav.writeUInt16LE(1, 20) // PCM
  wav.writeUInt16LE(1, 22) // mono
  wav.writeUInt32LE(rate, 24)
  wav.writeUInt32LE(rate * 2, 28)
  wav.writeUInt16LE(2, 32)
  wav.writeUInt16LE(16, 34)
  wav.write('data', 36)
  wav.writeUInt32LE(samples * 2, 40)
  for (let i = 0; i < samples; i++)
    wav.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), 44 + i * 2)
  return wav
}

/** A short WebM video (32 × 24, VP8), recorded from a canvas by Chromium's MediaRecorder. */
async function webmBytes(): Promise<Buffer> {
  const page = await browser.newPage()
  const b64 = (await page.evaluate(`(async () => {
    const c = document.createElement('canvas'); c.width = 32; c.height = 24
    const g = c.getContext('2d')
    const recorder = new MediaRecorder(c.captureStream(10), { mimeType: 'video/webm;codecs=vp8' })
    const parts = []
    recorder.ondataavailable = (e) => parts.push(e.data)
    let n = 0
    const draw = setInterval(() => { g.fillStyle = n++ % 2 ? '#c00' : '#00c'; g.fillRect(0, 0, 32, 24) }, 50)
    recorder.start()
    await new Promise((r) => setTimeout(r, 700))
    const stopped = new Promise((r) => (recorder.onstop = r))
    recorder.stop()
    await stopped
    clearInterval(draw)
    const bytes = new Uint8Array(await new Blob(parts).arrayBuffer())
    let text = ''
    for (const b of bytes) text += String.fromCharCode(b)
    return btoa(text)
  })()`)) as string
  await page.close()
  return Buffer.from(b64, 'base64')
}

/** Waits until `read` gives `expected` (30 s at most), then asserts it. */
async function until<T>(read: () => Promise<T>, expected: T): Promise<void> {
  let last: T | undefined
  for (let i = 0; i < 300; i++) {
    last = await read().catch(() => undefined)
    if (last === expected) break
    await new Promise((r) => setTimeout(r, 100))
  }
  expect(last).toBe(expected)
}
