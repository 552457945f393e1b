import { mkdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { ADMIN_PASSWORD, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'
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

// Issue 25: paste to send (text, images, files), text shares, and previews on the pickup page,
// in a real Chromium. The page.evaluate callbacks run in the page: they reach its globals through
// globalThis (the Node program has no DOM types).
/* eslint-disable @typescript-eslint/no-explicit-any */

jest.setTimeout(120_000)

const deps = testDeps()
let h: Harness
let browser: Browser
const problems: string[] = []

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

/** A context whose pages record dialogs (alert, confirm), CSP violations and uncaught errors. */
async function newContext(options: { locale?: string; width?: number; dark?: boolean } = {}) {
  const context = await browser.newContext({
    baseURL: h.url,
    locale: options.locale ?? 'en-US',
    viewport: { width: options.width ?? 1280, height: 900 },
    colorScheme: options.dark ? 'dark' : 'light',
    acceptDownloads: true,
  })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.url })
  const dialogs: string[] = []
  context.on('page', (page) => {
    page.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`)
      void d.dismiss()
    })
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) problems.push(msg.text())
    })
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
  })
  return { context, dialogs }
}

/** Submits the send page as it stands and returns the pickup code. */
async function submitShare(page: Page, maxDownloads?: number): Promise<string> {
  if (maxDownloads) await page.getByLabel('Maximum downloads').fill(String(maxDownloads))
  await page.getByTestId('send-submit').click()
  const code = page.getByTestId('pickup-code')
  await code.waitFor({ timeout: 30_000 })
  return (await code.textContent())!.trim()
}

/** Puts text on the clipboard and presses Ctrl+V with the focus outside any field. */
async function pasteText(page: Page, text: string) {
  await page.evaluate((t) => (globalThis as any).navigator.clipboard.writeText(t), text)
  await page.getByRole('heading', { level: 1 }).click()
  await page.keyboard.press('Control+V')
}

/** A one-second WebM recorded by Chromium's MediaRecorder from a canvas, in the page. */
async function recordWebm(page: Page): Promise<Buffer> {
  const base64: string = await page.evaluate(async () => {
    const canvas = (globalThis as any).document.createElement('canvas')
    canvas.width = 160
    canvas.height = 120
    const ctx = canvas.getContext('2d')
    const stream = canvas.captureStream(25)
    const recorder = new (globalThis as any).MediaRecorder(stream, { mimeType: 'video/webm;codecs=vp8' })
    const chunks: unknown[] = []
    recorder.ondataavailable = (e: any) => chunks.push(e.data)
    const stopped = new Promise((resolve) => (recorder.onstop = resolve))
    recorder.start(100)
    const started = (globalThis as any).performance.now()
    await new Promise<void>((resolve) => {
      const draw = () => {
        const t = (globalThis as any).performance.now() - started
        ctx.fillStyle = `hsl(${(t / 4) % 360} 80% 50%)`
        ctx.fillRect(0, 0, 160, 120)
        if (t < 1200) (globalThis as any).requestAnimationFrame(draw)
        else resolve()
      }
      draw()
    })
    recorder.stop()
    await stopped
    const blob = new (globalThis as any).Blob(chunks, { type: 'video/webm' })
    const bytes = new Uint8Array(await blob.arrayBuffer())
    let s = ''
    for (const b of bytes) s += String.fromCharCode(b)
    return (globalThis as any).btoa(s)
  })
  return Buffer.from(base64, 'base64')
}

/** Half a second of a 440 Hz tone, recorded by Chromium's MediaRecorder as audio/webm (Opus). */
async function recordAudio(page: Page): Promise<Buffer> {
  const base64: string = await page.evaluate(async () => {
    const w = globalThis as any
    const audio = new w.AudioContext()
    const tone = audio.createOscillator()
    const out = audio.createMediaStreamDestination()
    tone.connect(out)
    const recorder = new w.MediaRecorder(out.stream, { mimeType: 'audio/webm' })
    const chunks: unknown[] = []
    recorder.ondataavailable = (e: any) => chunks.push(e.data)
    const stopped = new Promise((resolve) => (recorder.onstop = resolve))
    recorder.start(100)
    tone.start()
    await new Promise((resolve) => w.setTimeout(resolve, 600))
    recorder.stop()
    tone.stop()
    await stopped
    const bytes = new Uint8Array(await new w.Blob(chunks, { type: 'audio/webm' }).arrayBuffer())
    let s = ''
    for (const b of bytes) s += String.fromCharCode(b)
    return w.btoa(s)
  })
  return Buffer.from(base64, 'base64')
}

const EXACT_TEXT = [
  'Password: hunter2 🔑👩‍💻🇨🇳',
  '你好，世界 — 取件码分享 日本語 한국어',
  '<script>alert(1)</script><img src=x onerror=alert(2)> &amp; &lt;b&gt;',
  'مرحبا بالعالم — שלום עולם',
  `long line ${'x'.repeat(600)} end`,
  '\ttabs\tand  spaces  ',
].join('\n')

describeBrowser('text shares, paste and previews in a real browser (chromium)', () => {
  it('when a text with emoji, CJK, RTL and <script> is pasted, then the pickup page shows exactly that text as text, no dialog opens, and Copy puts it on the clipboard', async () => {
    const { context, dialogs } = await newContext()
    const page = await context.newPage()
    await page.goto('/')
    await page.getByTestId('share-text').waitFor()
    await pasteText(page, EXACT_TEXT)
    await expect(page.getByTestId('share-text').inputValue()).resolves.toBe(EXACT_TEXT)
    const code = await submitShare(page, 3)

    // The text went the ordinary way: a UTF-8 text/plain file of the share.
    const taken = await api(h, 'POST', '/api/take', { code })
    expect(taken.body.manifest.files).toHaveLength(1)
    const file = taken.body.manifest.files[0]
    expect(file.type).toMatch(/^text\/plain/)
    expect(file.name).toMatch(/^text-\d{4}-\d{2}-\d{2}-\d{6}\.txt$/)
    expect(file.size).toBe(Buffer.byteLength(EXACT_TEXT, 'utf8'))

    await page.goto(`/pickup?code=${code}`)
    const shown = page.getByTestId('preview-text')
    await shown.waitFor()
    await expect(shown.evaluate((el: any) => el.textContent)).resolves.toBe(EXACT_TEXT)
    // Text, not markup: the <pre> has no element inside it.
    await expect(shown.evaluate((el: any) => el.children.length)).resolves.toBe(0)
    // Wrapped: the 600-character line does not widen the page.
    const widths = await page.evaluate(() => [
      (globalThis as any).document.documentElement.scrollWidth,
      (globalThis as any).innerWidth,
    ])
    expect(widths[0]).toBeLessThanOrEqual(widths[1])
    // The monospace switch.
    const font = () =>
      shown.evaluate((el: any) => (globalThis as any).getComputedStyle(el).fontFamily as string)
    const before = await font()
    await page.getByTestId('monospace').click()
    await expect(page.getByTestId('monospace').getAttribute('aria-pressed')).resolves.toBe('true')
    expect(await font()).not.toBe(before)
    expect(await font()).toMatch(/monospace/)

    await page.getByTestId('copy-text').click()
    await page.getByText('Copied').first().waitFor()
    await expect(page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).resolves.toBe(
      EXACT_TEXT,
    )

    // Shown = this receiver's download of it: one spent; its Download is free and byte-exact.
    await expect(page.getByTestId('remaining').textContent()).resolves.toBe('2')
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: `Download ${file.name}` }).click(),
    ])
    expect(readFileSync((await download.path())!).toString('utf8')).toBe(EXACT_TEXT)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(2)

    expect(dialogs).toEqual([])
    for (const v of await axeSerious(page)) problems.push(`pickup text: ${v}`)
    mkdirSync(SCREENSHOT_DIR, { recursive: true })
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'pickup-text-1280-light.png'), fullPage: true })
    await context.close()
  })

  it('when an image is pasted from the clipboard, then it joins the share and its preview renders (naturalWidth > 0)', async () => {
    const { context, dialogs } = await newContext()
    const page = await context.newPage()
    await page.goto('/')
    await page.getByTestId('share-text').waitFor()
    // A real PNG on the clipboard, drawn by the page's canvas; then a real Ctrl+V.
    await page.evaluate(async () => {
      const canvas = (globalThis as any).document.createElement('canvas')
      canvas.width = 64
      canvas.height = 48
      const ctx = canvas.getContext('2d')
      ctx.fillStyle = '#1d4ed8'
      ctx.fillRect(0, 0, 64, 48)
      const blob = await new Promise((resolve) => canvas.toBlob(resolve, 'image/png'))
      await (globalThis as any).navigator.clipboard.write([
        new (globalThis as any).ClipboardItem({ 'image/png': blob }),
      ])
    })
    await page.getByRole('heading', { level: 1 }).click()
    await page.keyboard.press('Control+V')
    await page.getByTestId('pasted').waitFor()
    await expect(page.getByTestId('file-list').locator('li').count()).resolves.toBe(1)
    for (const v of await axeSerious(page)) problems.push(`send pasted: ${v}`)
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'send-pasted-1280-light.png'), fullPage: true })
    const code = await submitShare(page, 2)
    const file = (await api(h, 'POST', '/api/take', { code })).body.manifest.files[0]
    expect(file.type).toBe('image/png')

    await page.goto(`/pickup?code=${code}`)
    const img = page.getByTestId('preview-image')
    await img.waitFor()
    await page.waitForFunction(() => {
      const el = (globalThis as any).document.querySelector('[data-testid=preview-image]')
      return el && el.complete && el.naturalWidth > 0
    })
    await expect(img.evaluate((el: any) => [el.naturalWidth, el.naturalHeight])).resolves.toEqual([64, 48])
    expect(dialogs).toEqual([])
    await context.close()
  })

  it('when HTML and SVG files with script are shared, then the pickup page offers them as downloads only, and nothing runs, even when their URLs are opened', async () => {
    const html = Buffer.from('<!doctype html><script>alert("html ran")</script><h1>hi</h1>')
    const svg = Buffer.from(
      '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(\'svg onload\')"><script>alert("svg ran")</script><rect width="10" height="10"/></svg>',
    )
    const a = await uploadFile(h, { name: 'page.html', data: html, type: 'text/html' })
    const b = await uploadFile(h, { name: 'logo.svg', data: svg, type: 'image/svg+xml' })
    const res = await api(h, 'POST', '/api/share', { files: [a.file, b.file], maxDownloads: 10 })
    const code = res.body.code as string
    const { context, dialogs } = await newContext()
    const page = await context.newPage()
    await page.goto(`/pickup?code=${code}`)
    await page.getByTestId('manifest').waitFor()
    await expect(page.getByTestId('preview').count()).resolves.toBe(0)
    await expect(page.getByTestId('show-preview').count()).resolves.toBe(0)
    await expect(page.getByTestId('preview-note').count()).resolves.toBe(0)
    for (const name of ['page.html', 'logo.svg']) {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByRole('link', { name: `Download ${name}` }).click(),
      ])
      expect(download.suggestedFilename()).toBe(name)
    }
    // Opened as addresses: the preview route refuses them (JSON), the download is an attachment.
    for (const f of [a.file, b.file]) {
      const q = `code=${code}&path=${encodeURIComponent(f.pathname)}`
      const shown = await page.goto(`/api/preview?${q}`)
      expect(shown!.status()).toBe(415)
      expect(shown!.headers()['content-type']).toMatch(/^application\/json/)
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.goto(`/api/download?${q}`).catch(() => null),
      ])
      expect(download.suggestedFilename()).toBe(f.name)
    }
    // And a text file whose words are markup, opened at its preview address, is shown as text.
    const t = await uploadFile(h, { name: 'x.txt', data: html, type: 'text/plain' })
    const share = await api(h, 'POST', '/api/share', { files: [t.file], maxDownloads: 2 })
    await page.goto(`/api/preview?code=${share.body.code}&path=${encodeURIComponent(t.file.pathname)}`)
    await expect(page.evaluate(() => (globalThis as any).document.body.innerText)).resolves.toBe(
      html.toString(),
    )
    await page.waitForTimeout(300)
    expect(dialogs).toEqual([])
    await context.close()
  })

  it('when a video, audio and a PDF are shared, then the video and the audio play (readyState >= 2) and the PDF opens in the Chromium viewer inside the sandboxed frame', async () => {
    const { context, dialogs } = await newContext()
    const page = await context.newPage()
    await page.goto('/')
    const webm = await recordWebm(page)
    expect(webm.length).toBeGreaterThan(500)
    const video = await uploadFile(h, { name: 'clip.webm', data: webm, type: 'video/webm' })
    const pdf = await uploadFile(h, { name: 'doc.pdf', data: tinyPdf(), type: 'application/pdf' })
    const tone = await recordAudio(page)
    const sound = await uploadFile(h, { name: 'tone.webm', data: tone, type: 'audio/webm' })
    const res = await api(h, 'POST', '/api/share', {
      files: [video.file, pdf.file, sound.file],
      maxDownloads: 5,
    })
    const code = res.body.code as string

    await page.goto(`/pickup?code=${code}`)
    await page.getByTestId('preview-video').waitFor()
    await page.evaluate(async () => {
      const v = (globalThis as any).document.querySelector('[data-testid=preview-video]')
      v.muted = true
      await v.play()
    })
    await page.waitForFunction(
      () => {
        const v = (globalThis as any).document.querySelector('[data-testid=preview-video]')
        return v.readyState >= 2 && v.currentTime > 0
      },
      undefined,
      { timeout: 20_000 },
    )
    await page.evaluate(async () => {
      const a = (globalThis as any).document.querySelector('[data-testid=preview-audio]')
      a.muted = true
      await a.play()
    })
    await page.waitForFunction(
      () => (globalThis as any).document.querySelector('[data-testid=preview-audio]').readyState >= 2,
      undefined,
      { timeout: 20_000 },
    )
    // Chromium's PDF viewer (an extension frame) is inside the sandboxed preview frame.
    await page.getByTestId('preview-pdf').waitFor()
    // The viewer frame's parent is the preview frame, whose document came with the sandbox CSP.
    const viewer = async () =>
      page
        .frames()
        .some(
          (f) =>
            f.url().startsWith('chrome-extension://') && !!f.parentFrame()?.url().includes('/api/preview?'),
        )
    for (let i = 0; i < 50 && !(await viewer()); i++) await page.waitForTimeout(200)
    expect(await viewer()).toBe(true)
    for (const v of await axeSerious(page)) problems.push(`pickup media: ${v}`)
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'pickup-media-1280-light.png'), fullPage: true })
    expect(dialogs).toEqual([])
    await context.close()
  })

  it('when a 1-download share is opened, then showing it is the download: others get nothing, this receiver downloads for free, and then it is used up', async () => {
    const data = Buffer.from('one copy only — 一份\n')
    const up = await uploadFile(h, { name: 'secret.txt', data, type: 'text/plain' })
    const res = await api(h, 'POST', '/api/share', { files: [up.file], maxDownloads: 1 })
    const code = res.body.code as string
    const { context } = await newContext()
    const page = await context.newPage()
    await page.goto(`/pickup?code=${code}`)
    await page.getByTestId('preview-text').waitFor()
    await expect(page.getByTestId('preview-text').textContent()).resolves.toBe(data.toString())
    await expect(page.getByTestId('remaining').textContent()).resolves.toBe('0')
    // Another receiver (another address) finds the share used up.
    const other = { 'x-forwarded-for': '10.77.0.9' }
    expect((await api(h, 'POST', '/api/take', { code }, other)).status).toBe(410)
    const q = `code=${code}&path=${encodeURIComponent(up.file.pathname)}`
    expect((await api(h, 'GET', `/api/download?${q}`, undefined, other)).status).toBe(410)
    // This receiver's Download is still offered, and free.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Download secret.txt' }).click(),
    ])
    expect(readFileSync((await download.path())!).equals(data)).toBe(true)
    // Then the share is used up for the page; this receiver's transfer holds one more copy (its
    // budget is 3 × size since issue 42), then none, through previews or downloads.
    await page.reload()
    await page.getByTestId('pickup-problem').waitFor()
    expect((await api(h, 'GET', `/api/preview?${q}`)).status).toBe(200)
    expect((await api(h, 'GET', `/api/preview?${q}`)).status).toBe(410)
    await context.close()
  })

  it('when a share has fewer downloads left than files to show, then each preview waits behind a Show button', async () => {
    const png = await pngBytes()
    const a = await uploadFile(h, { name: 'one.png', data: png, type: 'image/png' })
    const b = await uploadFile(h, { name: 'two.png', data: png, type: 'image/png' })
    const res = await api(h, 'POST', '/api/share', { files: [a.file, b.file], maxDownloads: 1 })
    const code = res.body.code as string
    const { context } = await newContext()
    const page = await context.newPage()
    await page.goto(`/pickup?code=${code}`)
    await page.getByTestId('manifest').waitFor()
    await expect(page.getByTestId('show-preview').count()).resolves.toBe(2)
    await expect(page.getByTestId('preview').count()).resolves.toBe(0)
    for (const v of await axeSerious(page)) problems.push(`pickup show buttons: ${v}`)
    await page.getByRole('button', { name: 'Show one.png (counts as your download of it)' }).click()
    await page.waitForFunction(() => {
      const el = (globalThis as any).document.querySelector('[data-testid=preview-image]')
      return el && el.complete && el.naturalWidth > 0
    })
    await expect(page.getByTestId('remaining').textContent()).resolves.toBe('0')
    // The other file is now out of reach; the shown one can still be downloaded.
    await expect(page.getByTestId('show-preview').count()).resolves.toBe(0)
    await expect(page.getByRole('link', { name: 'Download one.png' }).count()).resolves.toBe(1)
    await expect(page.getByRole('link', { name: 'Download two.png' }).count()).resolves.toBe(0)
    await context.close()
  })

  it('when the pages are in Chinese, then the text box and the preview speak Chinese, and axe finds nothing serious (light and dark, 360 px)', async () => {
    const up = await uploadFile(h, { name: '笔记.txt', data: Buffer.from('中文 🀄'), type: 'text/plain' })
    const res = await api(h, 'POST', '/api/share', { files: [up.file], maxDownloads: 4 })
    for (const dark of [false, true]) {
      const { context } = await newContext({ locale: 'zh-CN', width: 360, dark })
      const page = await context.newPage()
      await page.goto('/')
      await page.getByLabel('文字').waitFor()
      await page.getByLabel('文字').fill('x'.repeat(10))
      for (const v of await axeSerious(page)) problems.push(`send zh ${dark}: ${v}`)
      await page.screenshot({
        path: path.join(SCREENSHOT_DIR, `send-text-zh-360-${dark ? 'dark' : 'light'}.png`),
        fullPage: true,
      })
      await page.goto(`/pickup?code=${res.body.code}`)
      await page.getByTestId('preview-text').waitFor()
      await page.getByRole('button', { name: '复制文字' }).waitFor()
      await page.getByRole('button', { name: '等宽字体' }).waitFor()
      await page.getByText('显示一个文件即算作你对它的一次下载').waitFor()
      for (const v of await axeSerious(page)) problems.push(`pickup zh ${dark}: ${v}`)
      await page.screenshot({
        path: path.join(SCREENSHOT_DIR, `pickup-text-zh-360-${dark ? 'dark' : 'light'}.png`),
        fullPage: true,
      })
      await context.close()
    }
  })

  it('when the text is above the page limit, then the page says so and sends nothing', async () => {
    const { context } = await newContext()
    const page = await context.newPage()
    await page.goto('/')
    await page.getByTestId('share-text').waitFor()
    // 1 MiB + 1 byte of UTF-8: 349,526 three-byte characters.
    await page.getByTestId('share-text').fill('中'.repeat(349_526))
    await page.getByTestId('share-text-error').waitFor()
    await expect(page.getByTestId('share-text').getAttribute('aria-invalid')).resolves.toBe('true')
    await page.getByTestId('send-submit').click()
    await expect(page.getByTestId('send-error').textContent()).resolves.toContain('at most 1 MB')
    await context.close()
  })

  it('when the admin switches previews off or lowers their size, then the pickup page only offers downloads; the shares list marks text shares', async () => {
    // 20 KB of text: above the 0.01 MB (10 KB) preview size set below (sizes are typed in MB/GB).
    const note = await uploadFile(h, {
      name: 'note.txt',
      data: Buffer.from('just text\n'.repeat(2048)),
      type: 'text/plain',
    })
    const textShare = await api(h, 'POST', '/api/share', { files: [note.file], maxDownloads: 5 })
    const zip = await uploadFile(h, { name: 'a.zip', data: Buffer.from('PK'), type: 'application/zip' })
    const fileShare = await api(h, 'POST', '/api/share', { files: [zip.file], maxDownloads: 5 })
    const { context } = await newContext()
    const page = await context.newPage()
    try {
      await page.goto('/admin')
      await page.getByTestId('password').fill(ADMIN_PASSWORD)
      await page.getByTestId('login').click()
      await page.getByTestId('shares-table').waitFor()
      const row = (code: string) => page.getByTestId('shares-table').locator('tr', { hasText: code })
      await expect(row(textShare.body.code).getByTestId('text-badge').textContent()).resolves.toBe(
        'text share',
      )
      await expect(row(fileShare.body.code).getByTestId('text-badge').count()).resolves.toBe(0)
      for (const v of await axeSerious(page)) problems.push(`admin shares: ${v}`)

      await page.getByRole('tab', { name: 'Settings' }).click()
      await page.getByTestId('setting-previewEnabled').waitFor()
      await expect(page.getByTestId('setting-previewEnabled').isChecked()).resolves.toBe(true)
      await page.getByTestId('setting-previewMaxBytes').fill('0.01')
      await page.getByTestId('setting-previewMaxBytes-unit').selectOption('MB')
      await page.getByTestId('save-settings').click()
      await page.getByTestId('settings-message').waitFor()
      expect((await h.services.settings.get()).previewMaxBytes).toBe(10_486)
      for (const v of await axeSerious(page)) problems.push(`admin settings: ${v}`)
      // The note is 20 KB: above the size, only its Download.
      await page.goto(`/pickup?code=${textShare.body.code}`)
      await page.getByTestId('manifest').waitFor()
      await expect(page.getByTestId('preview').count()).resolves.toBe(0)
      await expect(page.getByTestId('remaining').textContent()).resolves.toBe('5')

      await page.goto('/admin')
      await page.getByRole('tab', { name: 'Settings' }).click()
      await page.getByTestId('setting-previewMaxBytes').fill('1')
      await page.getByTestId('setting-previewMaxBytes-unit').selectOption('MB')
      await page.getByTestId('setting-previewEnabled').uncheck()
      await page.getByTestId('save-settings').click()
      await page.getByTestId('settings-message').waitFor()
      expect(await h.services.settings.get()).toMatchObject({
        previewEnabled: false,
        previewMaxBytes: 1_048_576,
      })
      await page.goto(`/pickup?code=${textShare.body.code}`)
      await page.getByTestId('manifest').waitFor()
      await expect(page.getByTestId('preview').count()).resolves.toBe(0)
      await expect(page.getByRole('link', { name: 'Download note.txt' }).count()).resolves.toBe(1)
    } finally {
      await h.services.settings.update({ previewEnabled: true, previewMaxBytes: 20_971_520 })
    }
    await context.close()
  })

  it('when the suite ran, then no page logged a CSP violation, an uncaught error or a serious axe violation', () => {
    expect(problems).toEqual([])
  })
})

/** A 32×32 PNG drawn by Chromium. */
async function pngBytes(): Promise<Buffer> {
  const page = await browser.newPage()
  const b64: string = await page.evaluate(() => {
    const canvas = (globalThis as any).document.createElement('canvas')
    canvas.width = 32
    canvas.height = 32
    canvas.getContext('2d').fillRect(0, 0, 32, 32)
    return canvas.toDataURL('image/png').split(',')[1]
  })
  await page.close()
  return Buffer.from(b64, 'base64')
}
