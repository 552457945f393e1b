import { createHash, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core'
import { fromBuffer, type Entry, type ZipFile } from 'yauzl'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'
import { CHROMIUM, CHROMIUM_ARGS, describeBrowser, ensureWebBuilt, haveChromium } from './support.ts'

// Issue 20 in a real browser: download all (one .zip, one download), downloads the person can
// trust (expired said, a double click counted once, the count refreshed), the leave-page warning
// while uploading, messages in Chinese for server error codes, the 404 page, the weight of the
// send page, and axe with no violation at all on the new states.

// Browser globals of the page.evaluate callbacks (they run in chromium).
declare const document: {
  title: string
  activeElement: unknown
  body: unknown
  querySelector(s: string): unknown
}
declare function getComputedStyle(e: unknown): {
  outlineColor: string
  outlineStyle: string
  backgroundColor: string
}

/** WCAG relative luminance contrast of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const lum = (c: string) => {
    const [r, g, bl] = c
      .match(/\d+(\.\d+)?/g)!
      .slice(0, 3)
      .map((v) => {
        const x = Number(v) / 255
        return x <= 0.04045 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4
      })
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!
  }
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x)
  return (hi! + 0.05) / (lo! + 0.05)
}

jest.setTimeout(120_000)

const deps = testDeps()
let h: Harness
let browser: Browser
const pageErrors: string[] = []

beforeAll(async () => {
  if (!haveChromium) return
  ensureWebBuilt()
  h = await startHarness(deps)
  await liveBrowser()
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await h?.close()
})

/**
 * The browser, launched again when it is gone: run after other browser suites in one jest worker,
 * the first launch was sometimes found closed ("Target page, context or browser has been closed").
 */
async function liveBrowser(): Promise<Browser> {
  for (let attempt = 0; !browser?.isConnected(); attempt++) {
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
    } catch (err) {
      if (attempt >= 2) throw err
    }
  }
  return browser
}

async function newPage(locale = 'en-US'): Promise<{ context: BrowserContext; page: Page }> {
  const context = await (await liveBrowser()).newContext({ baseURL: h.url, locale, acceptDownloads: true })
  const page = await context.newPage()
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text())
  })
  page.on('pageerror', (err) => pageErrors.push(`page error: ${err.message}`))
  return { context, page }
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex')

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

async function newShare(files: Array<{ name: string; data: Buffer }>, maxDownloads: number) {
  const uploaded = []
  for (const f of files) uploaded.push((await uploadFile(h, f)).file)
  const res = await api(h, 'POST', '/api/share', { files: uploaded, maxDownloads })
  expect(res.status).toBe(200)
  return { code: res.body.code as string, token: res.body.token as string }
}

const remaining = async (code: string) => {
  const res = await api(h, 'POST', '/api/take', { code })
  return res.status === 200 ? (res.body.remaining as number) : (res.body.error.code as string)
}

/** Waits until the element's text is `want` (or matches it); returns the text. */
async function waitForText(loc: Locator, want: string | RegExp, timeout = 15_000): Promise<string> {
  const until = Date.now() + timeout
  for (;;) {
    const text = ((await loc.count()) ? await loc.first().textContent() : '')?.trim() ?? ''
    if (typeof want === 'string' ? text === want : want.test(text)) return text
    if (Date.now() > until) throw new Error(`expected ${String(want)}, the text is ${JSON.stringify(text)}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** Every axe violation, whatever its impact. */
async function axeAll(page: Page): Promise<string[]> {
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'))
  const violations = await page.evaluate(async () => {
    const { axe, document: doc } = globalThis as unknown as {
      axe: { run: (context: unknown, options: unknown) => Promise<{ violations: unknown[] }> }
      document: unknown
    }
    return (await axe.run(doc, { resultTypes: ['violations'] })).violations
  })
  return (violations as Array<{ id: string; impact: string }>).map((v) => `${v.id} (${v.impact})`)
}

describeBrowser('downloads, uploads and messages in a real browser (chromium)', () => {
  afterAll(() => {
    expect(pageErrors).toEqual([])
  })

  it('when "Download all" is clicked, then one .zip with every file (sha256 per file) arrives and the share spends one download, shown refreshed', async () => {
    const files = [
      { name: 'one.bin', data: randomBytes(150_000) },
      { name: 'two.txt', data: Buffer.from('two') },
      { name: 'three.jpg', data: randomBytes(60_000) },
    ]
    const s = await newShare(files, 3)
    const { context, page } = await newPage()
    await page.goto(`/pickup#${s.token}`)
    await page.getByTestId('download-all').waitFor()
    await expect(page.getByTestId('count-rule').textContent()).resolves.toContain('single download')
    expect(await axeAll(page)).toEqual([])
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('download-all').click(),
    ])
    expect(download.suggestedFilename()).toBe(`pickup-${s.code}.zip`)
    const entries = await unzip(readFileSync((await download.path())!))
    expect(Object.fromEntries(entries)).toEqual(Object.fromEntries(files.map((f) => [f.name, sha(f.data)])))
    expect(await remaining(s.code)).toBe(2)
    await waitForText(page.getByTestId('remaining'), '2')
    await context.close()
  })

  it('when a file is double-clicked, then one download starts and one is counted; the page shows the count from the server', async () => {
    const s = await newShare([{ name: 'twice.txt', data: Buffer.from('only one of these') }], 5)
    const { context, page } = await newPage()
    await page.goto(`/pickup?code=${s.code}`)
    const downloads: unknown[] = []
    page.on('download', (d) => downloads.push(d))
    await page.getByTestId('download').dblclick()
    await page.getByTestId('pickup-notice').waitFor()
    await waitForText(page.getByTestId('remaining'), '4')
    await page.waitForTimeout(1500)
    expect(downloads).toHaveLength(1)
    expect(await remaining(s.code)).toBe(4)
    await context.close()
  })

  it('when the share expired while the page was open, then a click says so (with the date) and nothing is downloaded or spent', async () => {
    const s = await newShare([{ name: 'late.txt', data: Buffer.from('late') }], 2)
    const { context, page } = await newPage()
    await page.goto(`/pickup?code=${s.code}`)
    await page.getByTestId('download').waitFor()
    const past = new Date(Date.now() - 60_000)
    await deps.db.share.update({ where: { code: s.code }, data: { expiresAt: past } })
    let downloaded = false
    page.on('download', () => (downloaded = true))
    await page.getByTestId('download').click()
    const problem = page.getByTestId('pickup-problem')
    await problem.waitFor()
    expect(await problem.textContent()).toMatch(/^This share expired on .+\.$/)
    expect(downloaded).toBe(false)
    expect(await remaining(s.code)).toBe('share_expired')
    expect(await axeAll(page)).toEqual([])
    await context.close()
  })

  it('when bytes are in flight, then leaving the page asks first; "Cancel all" stops every upload and leaves the files listed', async () => {
    const { context, page } = await newPage()
    // The upload's bytes never reach the server: they stay in flight until the test lets go.
    await page.route('**/api/tus/**', (route) =>
      route.request().method() === 'PATCH' ? undefined : route.continue(),
    )
    await page.route('**/api/blob/upload', () => undefined)
    await page.goto('/')
    await page.getByTestId('file-input').setInputFiles([
      { name: 'big.bin', mimeType: 'application/octet-stream', buffer: randomBytes(2_000_000) },
      { name: 'small.bin', mimeType: 'application/octet-stream', buffer: randomBytes(1_000) },
    ])
    await page.getByTestId('send-submit').click()
    await page.getByTestId('cancel-all').waitFor()
    const dialog = page.waitForEvent('dialog')
    await page.close({ runBeforeUnload: true })
    const asked = await dialog
    expect(asked.type()).toBe('beforeunload')
    await asked.dismiss() // stay
    expect(page.isClosed()).toBe(false)
    await page.getByTestId('cancel-all').click()
    await waitForText(page.getByTestId('send-error'), 'The uploads were cancelled.')
    await expect(page.getByTestId('file-list').locator('li').count()).resolves.toBe(2)
    // Nothing in flight any more: the page closes without asking.
    let askedAgain = false
    page.on('dialog', (d) => {
      askedAgain = true
      void d.accept()
    })
    await page.close({ runBeforeUnload: true })
    await new Promise((r) => setTimeout(r, 300))
    expect(askedAgain).toBe(false)
    await context.close()
  })

  it('when the page is in Chinese, then server error codes read in Chinese with the code as the only detail', async () => {
    const { context, page } = await newPage('zh-CN')
    // share_not_found, share_used_up, share_expired on the pickup page
    await page.goto('/pickup?code=100000000001')
    await waitForText(page.getByTestId('pickup-problem'), /[\u4e00-\u9fff]/)
    const used = await newShare([{ name: 'u.txt', data: Buffer.from('u') }], 1)
    await api(h, 'POST', '/api/take', { code: used.code })
    await fetch(`${h.url}/api/download-all?code=${used.code}`).then((r) => r.arrayBuffer())
    await page.goto(`/pickup?code=${used.code}`)
    await waitForText(page.getByTestId('pickup-problem'), '此分享的下载次数已用完。')
    const expired = await newShare([{ name: 'e.txt', data: Buffer.from('e') }], 1)
    await deps.db.share.update({
      where: { code: expired.code },
      data: { expiresAt: new Date(Date.now() - 1000) },
    })
    await page.goto(`/pickup?code=${expired.code}`)
    await waitForText(page.getByTestId('pickup-problem'), /^此分享已于 .+ 过期。$/)

    // auth_code_invalid, auth_code_scope, auth_code_used, unlimited_disabled on the send page,
    // before any byte is uploaded.
    await h.services.settings.update({ unlimitedEnabled: true })
    try {
      const sizeOnly = await h.services.authCodes.issue({ scope: 'size', expiresInHours: 1 })
      const used2 = await h.services.authCodes.issue({ scope: 'both', expiresInHours: 1 })
      const { file } = await uploadFile(h, { name: 'x.bin', data: randomBytes(10) })
      expect(
        (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: null, authCode: used2.code }))
          .status,
      ).toBe(200)
      let uploads = 0
      page.on('request', (r) => {
        if (/\/api\/(upload|tus|blob)/.test(r.url())) uploads++
      })
      await page.goto('/')
      await page
        .getByTestId('file-input')
        .setInputFiles([{ name: 'a.txt', mimeType: 'text/plain', buffer: Buffer.from('a') }])
      await page.getByTestId('unlimited-downloads').check()
      const expectMessage = async (authCode: string, text: string) => {
        await page.locator('#auth-code').fill(authCode)
        await page.getByTestId('send-submit').click()
        await waitForText(page.getByTestId('send-error'), text)
      }
      await expectMessage('psac_wrong', '授权码无效。（auth_code_invalid）')
      await expectMessage(sizeOnly.code, '授权码不包含你请求的权限。（auth_code_scope）')
      await expectMessage(used2.code, '授权码已被使用。（auth_code_used）')
      await h.services.settings.update({ unlimitedEnabled: false })
      await expectMessage(sizeOnly.code, '此服务器已关闭无限制模式。（unlimited_disabled）')
      expect(uploads).toBe(0)
      expect(await axeAll(page)).toEqual([])
    } finally {
      await h.services.settings.update({ unlimitedEnabled: false })
    }
    await context.close()
  })

  it("when an unknown page is opened, then 404 with the site's own page (in the page's language), no violation; an API path keeps its JSON", async () => {
    const { context, page } = await newPage()
    const res = await page.goto('/no/such/page')
    expect(res!.status()).toBe(404)
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Page not found')
    expect(await page.evaluate(() => document.title)).toMatch(/^Page not found/)
    expect(await axeAll(page)).toEqual([])
    const api404 = await page.goto('/api/no-such-thing')
    expect(api404!.status()).toBe(404)
    expect(api404!.headers()['content-type']).toMatch(/json/)
    await context.close()
    const zh = await newPage('zh-CN')
    await zh.page.goto('/nope')
    await expect(zh.page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('找不到页面')
    await zh.context.close()
  })

  it.each([false, true])(
    'when a control has keyboard focus (dark mode: %s), then its ring contrasts at least 3:1 with the page and the card behind it',
    async (dark) => {
      const context = await (
        await liveBrowser()
      ).newContext({ baseURL: h.url, colorScheme: dark ? 'dark' : 'light' })
      const page = await context.newPage()
      await page.goto('/pickup')
      await page.getByTestId('code-input').waitFor()
      await page.keyboard.press('Tab') // the skip link
      await page.keyboard.press('Tab')
      const colours = await page.evaluate(() => {
        const focused = getComputedStyle(document.activeElement)
        return {
          ring: focused.outlineColor,
          style: focused.outlineStyle,
          page: getComputedStyle(document.body).backgroundColor,
          card: getComputedStyle(document.querySelector('.card')).backgroundColor,
        }
      })
      expect(colours.style).toBe('solid')
      expect(contrast(colours.ring, colours.page)).toBeGreaterThanOrEqual(3)
      expect(contrast(colours.ring, colours.card)).toBeGreaterThanOrEqual(3)
      await context.close()
    },
  )

  it('when the send page is loaded, then fewer than 40 KB travel (compressed), without the admin chunk; /admin loads it', async () => {
    const { context, page } = await newPage()
    const responses: Array<Promise<{ url: string; bytes: number }>> = []
    // Only the send page's own load is measured; sizes asked once the page has gone are not.
    let measuring = true
    page.on('response', (r) => {
      if (!measuring) return
      responses.push(
        r
          .request()
          .sizes()
          .then((s) => ({ url: r.url(), bytes: s.responseBodySize + s.responseHeadersSize })),
      )
    })
    await page.goto('/', { waitUntil: 'networkidle' })
    await page.getByTestId('send-submit').waitFor()
    measuring = false
    const sent = await Promise.all(responses)
    const total = sent.reduce((sum, r) => sum + r.bytes, 0)
    expect(sent.some((r) => r.url.includes('/assets/admin-'))).toBe(false)
    expect(total).toBeLessThan(40 * 1024)
    expect(await axeAll(page)).toEqual([])
    const adminChunk = page.waitForResponse((r) => r.url().includes('/assets/admin-'))
    await page.goto('/admin')
    expect((await adminChunk).status()).toBe(200)
    await context.close()
  })
})
