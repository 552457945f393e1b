import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import {
  ADMIN_PASSWORD,
  adminLogin,
  api,
  type Harness,
  startHarness,
  testDeps,
  uploadFile,
} from '../support/harness.ts'
import {
  CHROMIUM,
  CHROMIUM_ARGS,
  describeBrowser,
  ensureWebBuilt,
  haveChromium,
  SCREENSHOT_DIR,
} from './support.ts'

// The admin area of issue 20 in a real browser: storage instances from the page, the phone layout,
// settings in MB/GB with messages for people, the audit log in words, and axe on each of them.

declare const localStorage: { clear(): void }
declare const document: {
  activeElement: { id: string } | null
  documentElement: { scrollWidth: number; clientWidth: number }
}

// s3rver speaks the S3 protocol on loopback (access key and secret S3RVER); it ships no types.
const S3rver = require('s3rver') as new (o: Record<string, unknown>) => {
  run(): Promise<{ port: number }>
  close(): Promise<void>
}

jest.setTimeout(120_000)

const deps = testDeps()
const BUCKET = 'quartet-admin-browser'
const MB = 1024 ** 2
const GB = 1024 ** 3
let h: Harness
let browser: Browser
let s3: InstanceType<typeof S3rver>
let s3Dir: string
let endpoint: string
const pageErrors: string[] = []

beforeAll(async () => {
  if (!haveChromium) return
  ensureWebBuilt()
  s3Dir = mkdtempSync(path.join(os.tmpdir(), 's3rver-admin-'))
  s3 = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: s3Dir,
    configureBuckets: [{ name: BUCKET }],
  })
  endpoint = `http://127.0.0.1:${(await s3.run()).port}`
  h = await startHarness(deps)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
}, 180_000)

afterAll(async () => {
  await browser?.close()
  await h?.close()
  await s3?.close()
  if (s3Dir) rmSync(s3Dir, { recursive: true, force: true })
})

async function newContext(options: { width?: number; locale?: string } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({
    baseURL: h.url,
    locale: options.locale ?? 'en-US',
    viewport: { width: options.width ?? 1280, height: 860 },
  })
  context.on('page', (page) => {
    page.on('pageerror', (err) => pageErrors.push(err.message))
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text())
    })
  })
  return context
}

async function loggedIn(context: BrowserContext): Promise<Page> {
  const page = await context.newPage()
  await page.goto('/admin')
  await page.getByTestId('password').fill(ADMIN_PASSWORD)
  await page.getByTestId('login').click()
  await page.getByRole('tab', { name: 'Shares' }).waitFor()
  return page
}

let axeSource: string | undefined
/** Every axe violation, whatever its impact (the suite wants none). */
async function axeAll(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8')
  await page.evaluate(axeSource)
  const violations = (await page.evaluate(async () => {
    const { axe, document: doc } = globalThis as unknown as {
      axe: { run: (context: unknown, options: unknown) => Promise<{ violations: unknown[] }> }
      document: unknown
    }
    return (await axe.run(doc, { resultTypes: ['violations'] })).violations
  })) as Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>
  return violations.map((v) => `${v.impact} ${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

const storeNamed = async (name: string) =>
  (
    (await api(h, 'GET', '/api/admin/stores', undefined, await adminLogin(h))).body.items as Array<{
      name: string
      quotaBytes: number | null
      enabled: boolean
      kind: string
      settings: Record<string, unknown>
    }>
  ).find((s) => s.name === name)

/** Waits until the element shows this text (messages replace each other), then checks all of it. */
async function said(page: Page, testId: string, expected: string | RegExp): Promise<void> {
  const el = page.getByTestId(testId)
  await el.filter({ hasText: expected }).waitFor({ timeout: 20_000 })
  const text = (await el.textContent())!
  if (typeof expected === 'string') expect(text).toBe(expected)
  else expect(text).toMatch(expected)
}

/** Waits (briefly) until the element with this id has the focus. */
async function focused(page: Page, id: string): Promise<void> {
  try {
    await page.waitForFunction((want) => document.activeElement?.id === want, id, { timeout: 5000 })
  } catch {
    expect(await page.evaluate(() => document.activeElement?.id)).toBe(id)
  }
}

/**
 * A loopback port nothing listens on: port 1 (tcpmux), which nothing here serves. A port bound and
 * released again could be handed to another server at once (the suite's Node 20 and 24 runs go
 * side by side), which then answered the probe.
 */
async function closedPort(): Promise<number> {
  return 1
}

/** A full-page screenshot for people to look at (test-results/screenshots, git-ignored). */
async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${name}.png`), fullPage: true })
}

const acceptNextDialog = (page: Page) => page.once('dialog', (d) => void d.accept())

describeBrowser('the admin area in a real browser (chromium)', () => {
  it('when the admin adds a blob folder and a bucket from the Storage tab (connection tested), edits a quota and deletes, then delete is refused while a file lives there and allowed after', async () => {
    const context = await newContext()
    const page = await loggedIn(context)
    await page.getByRole('tab', { name: 'Storage' }).click()
    const form = page.getByTestId('new-store-form')
    await form.waitFor()

    // Validation first: an empty name is refused in words, the focus on that field.
    await page.getByTestId('new-store-save').click()
    await said(page, 'new-store-name-error', /^Use 1 to 63 lower-case/)
    await focused(page, 'new-store-name')

    // A blob folder with a 1 GB quota, tested, then added.
    await page.getByTestId('new-store-name').fill('photos')
    await page.getByTestId('new-store-kind').selectOption('blob')
    await page.getByTestId('new-store-no-quota').uncheck()
    await page.getByTestId('new-store-quota').fill('1')
    await page.getByTestId('new-store-quota-unit').selectOption('GB')
    await page.getByTestId('new-store-test').click()
    await said(page, 'new-store-test-result', /^Connection works \(\d+ ms\)\.$/)
    await page.getByTestId('new-store-save').click()
    await said(page, 'stores-message', 'Storage instance photos added.')
    const photosMeter = page.getByRole('meter', { name: 'photos' })
    await photosMeter.waitFor()
    expect(Number(await photosMeter.getAttribute('max'))).toBe(GB)
    expect(await storeNamed('photos')).toMatchObject({ kind: 'blob', quotaBytes: GB, enabled: true })

    // A bucket: a wrong secret fails the test in words (and is not saved), the right one works.
    await page.getByTestId('new-store-name').fill('archive')
    await page.getByTestId('new-store-kind').selectOption('bucket')
    await page.getByTestId('new-store-test').click()
    await said(page, 'new-store-endpoint-error', 'Enter an address starting with http:// or https://.')
    await focused(page, 'new-store-endpoint')
    await page.getByTestId('new-store-endpoint').fill(endpoint)
    await page.getByTestId('new-store-bucket').fill(BUCKET)
    await page.getByTestId('new-store-accessKey').fill('NOT-THE-KEY')
    await page.getByTestId('new-store-secretKey').fill('not-the-secret-5b1d')
    await page.getByTestId('new-store-test').click()
    await said(
      page,
      'new-store-test-result',
      /^Connection failed while writing a test file: the server refused the access key or secret key/,
    )
    await page.getByTestId('new-store-accessKey').fill('S3RVER')
    await page.getByTestId('new-store-secretKey').fill('S3RVER')
    await page.getByTestId('new-store-test').click()
    await said(page, 'new-store-test-result', /^Connection works/)
    await page.getByTestId('new-store-save').click()
    await said(page, 'stores-message', 'Storage instance archive added.')
    await page.getByTestId('store-card-archive').waitFor()
    await expect(page.getByTestId('store-card-archive').textContent()).resolves.toContain(
      'Credentials set: Access key, Secret key',
    )
    // Secrets are never sent back to the page (the form was emptied; the list has names only).
    expect(await page.content()).not.toContain('S3RVER')
    expect(await storeNamed('archive')).toMatchObject({ kind: 'bucket', quotaBytes: null })

    // A git repository with download mirrors of its own, entered comma-separated.
    const mirrors = [
      'https://cdn.example.test/gh/{owner}/{repo}@{sha}/{path}',
      'https://raw.example.test/{owner}/{repo}/{sha}/{path}',
    ]
    await page.getByTestId('new-store-name').fill('vault')
    await page.getByTestId('new-store-kind').selectOption('repo')
    await page.getByTestId('new-store-remoteUrl').fill('https://git.example.test/acme/vault.git')
    await page.getByTestId('new-store-enabled').uncheck()
    await page.getByTestId('new-store-mirrors').fill(mirrors.join(', '))
    await page.getByTestId('new-store-save').click()
    await said(page, 'stores-message', 'Storage instance vault added.')
    expect((await storeNamed('vault'))?.settings.mirrors).toEqual(mirrors)

    // The saved bucket tests from its card with its stored keys.
    await page.getByRole('button', { name: 'Test connection of archive' }).click()
    await said(page, 'store-test-archive', /^Connection works/)

    // A built-in instance: only quota and enabled can change, and it has no Delete.
    await page.getByRole('button', { name: 'Edit blob' }).click()
    await page
      .getByTestId('edit-blob-form')
      .getByText(/^Built in: set by environment variables/)
      .waitFor()
    expect(await page.getByTestId('edit-blob-form').getByRole('textbox').count()).toBe(1) // the quota
    expect(await page.getByRole('button', { name: 'Delete blob' }).count()).toBe(0)
    await page.getByTestId('edit-blob-form').getByRole('button', { name: 'Cancel' }).click()

    // Edit: the quota becomes 2 GB; the bucket's keys stay (left empty).
    await page.getByRole('button', { name: 'Edit photos' }).click()
    await expect(page.getByTestId('edit-photos-quota').inputValue()).resolves.toBe('1')
    await page.getByTestId('edit-photos-quota').fill('2')
    await page.getByTestId('edit-photos-save').click()
    await said(page, 'stores-message', 'Storage instance photos saved.')
    // The list reloads after the message: wait for the bar with the new quota.
    await page
      .getByRole('meter', { name: 'photos' })
      .and(page.locator(`[max="${2 * GB}"]`))
      .waitFor()
    expect(await storeNamed('photos')).toMatchObject({ quotaBytes: 2 * GB })

    await page.getByRole('button', { name: 'Edit archive' }).click()
    await shot(page, 'admin-storage-edit-1280-light')
    expect(await axeAll(page)).toEqual([])
    await page.getByTestId('edit-archive-no-quota').uncheck()
    await page.getByTestId('edit-archive-quota').fill('500')
    await page.getByTestId('edit-archive-quota-unit').selectOption('MB')
    await page.getByTestId('edit-archive-enabled').uncheck()
    await page.getByTestId('edit-archive-test').click()
    await said(page, 'edit-archive-test-result', /^Connection works/)
    await page.getByTestId('edit-archive-save').click()
    await said(page, 'stores-message', 'Storage instance archive saved.')
    expect(await storeNamed('archive')).toMatchObject({ quotaBytes: 500 * MB, enabled: false })
    await page.getByRole('button', { name: 'Test connection of archive' }).click()
    await said(page, 'store-test-archive', /^Connection works/)

    // A file lives in photos (the built-in blob is off, so the upload lands there).
    const cookie = await adminLogin(h)
    await api(h, 'POST', '/api/admin/stores', { name: 'blob', enabled: false }, cookie)
    const kept = await uploadFile(h, { name: 'kept.bin', data: randomBytes(100_000) })
    const share = await api(h, 'POST', '/api/share', { files: [kept.file] })
    expect(share.status).toBe(200)
    await api(h, 'POST', '/api/admin/stores', { name: 'blob', enabled: true }, cookie)

    await page.getByRole('tab', { name: 'Shares' }).click()
    await page.getByRole('tab', { name: 'Storage' }).click()
    await said(page, 'store-usage-photos', /^97\.7 KB used of 2 GB \(0%\)/)
    acceptNextDialog(page)
    await page.getByRole('button', { name: 'Delete photos' }).click()
    await said(
      page,
      'stores-message',
      'Cannot delete photos: 1 share(s) still keep files there. Delete those shares first, or disable the instance so no new uploads go there.',
    )
    expect(await storeNamed('photos')).toBeDefined()

    // The share goes (from the Shares tab); then photos can be deleted.
    await page.getByRole('tab', { name: 'Shares' }).click()
    acceptNextDialog(page)
    await page.getByRole('button', { name: `Delete share ${share.body.code}` }).click()
    await page.getByTestId('shares-message').filter({ hasText: 'deleted' }).waitFor()
    await page.getByRole('tab', { name: 'Storage' }).click()
    acceptNextDialog(page)
    await page.getByRole('button', { name: 'Delete photos' }).click()
    await said(page, 'stores-message', 'Storage instance photos deleted.')
    expect(await storeNamed('photos')).toBeUndefined()
    await page.getByRole('meter', { name: 'photos' }).waitFor({ state: 'detached' })

    expect(await axeAll(page)).toEqual([])
    await context.close()
  })

  it('when the admin area is used at 390 px, then shares are cards whose Delete is in view without scrolling sideways, and every tab has no axe violation', async () => {
    const file = await uploadFile(h, {
      name: 'a rather long file name that would widen a table column a lot.bin',
      data: randomBytes(5000),
    })
    const share = await api(h, 'POST', '/api/share', { files: [file.file] })
    const code = share.body.code as string
    const context = await newContext({ width: 390 })
    const page = await loggedIn(context)

    await page.getByTestId('shares-table').waitFor()
    expect(
      await page.getByTestId('shares-table').evaluate((el) => (el as unknown as { tagName: string }).tagName),
    ).toBe('UL')
    // Every column keeps its label in the card.
    const cards = (await page.getByTestId('shares-table').textContent())!
    for (const label of ['Files', 'Size', 'Created', 'Expires', 'Downloads left'])
      expect(cards).toContain(label)
    const del = page.getByRole('button', { name: `Delete share ${code}` })
    await del.waitFor()
    // In view without scrolling: inside the 390 px viewport, and the page cannot scroll sideways.
    const box = (await del.boundingBox())!
    expect(box.x).toBeGreaterThanOrEqual(0)
    expect(box.x + box.width).toBeLessThanOrEqual(390)
    expect(await del.isVisible()).toBe(true)
    const widths = await page.evaluate(() => [
      document.documentElement.scrollWidth,
      document.documentElement.clientWidth,
    ])
    expect(widths[0]).toBeLessThanOrEqual(widths[1]!)
    expect(await axeAll(page)).toEqual([])
    await shot(page, 'admin-shares-cards-390-light')

    // Each tab once its content arrived (the element that shows it is loaded).
    const loaded: Record<string, string> = {
      Settings: 'save-settings',
      'Authorization codes': 'create-code',
      Storage: 'stores',
      'Audit log': 'audit-list',
    }
    for (const [tab, testId] of Object.entries(loaded)) {
      await page.getByRole('tab', { name: tab }).click()
      await page.getByTestId(testId).waitFor()
      await page.locator('.panel [aria-busy]').waitFor({ state: 'detached' })
      const w = await page.evaluate(() => [
        document.documentElement.scrollWidth,
        document.documentElement.clientWidth,
      ])
      expect([tab, w[0]! <= w[1]!]).toEqual([tab, true])
      expect([tab, await axeAll(page)]).toEqual([tab, []])
      await shot(page, `admin-${tab.split(' ')[0]!.toLowerCase()}-cards-390-light`)
    }

    // Deleting from the card works at this width too.
    await page.getByRole('tab', { name: 'Shares' }).click()
    acceptNextDialog(page)
    await page.getByRole('button', { name: `Delete share ${code}` }).click()
    await said(page, 'shares-message', `Share ${code} deleted.`)
    await context.close()
  })

  it('when sizes are typed in MB or GB and values are wrong, then they round-trip as bytes, the messages read as sentences and the first invalid field has the focus', async () => {
    const before = await h.services.settings.get()
    // A size MB with two decimals cannot say exactly (1.18 MB shown): saving the form keeps it.
    await h.services.settings.update({ previewMaxBytes: 1_234_567 })
    const context = await newContext()
    const page = await loggedIn(context)
    await page.getByRole('tab', { name: 'Settings' }).click()
    await page.getByTestId('save-settings').waitFor()

    await page.getByTestId('setting-maxFileSizeBytes').fill('250')
    await page.getByTestId('setting-maxFileSizeBytes-unit').selectOption('MB')
    await page.getByTestId('save-settings').click()
    await said(page, 'settings-message', 'Settings saved.')
    expect((await h.services.settings.get()).maxFileSizeBytes).toBe(250 * MB)
    expect((await h.services.settings.get()).previewMaxBytes).toBe(1_234_567)
    await expect(page.getByTestId('setting-previewMaxBytes').inputValue()).resolves.toBe('1.18')
    await page.reload()
    await page.getByRole('tab', { name: 'Settings' }).click()
    await expect(page.getByTestId('setting-maxFileSizeBytes').inputValue()).resolves.toBe('250')
    await expect(page.getByTestId('setting-maxFileSizeBytes-unit').inputValue()).resolves.toBe('MB')

    await page.getByTestId('setting-maxFileSizeBytes').fill('1.5')
    await page.getByTestId('setting-maxFileSizeBytes-unit').selectOption('GB')
    await page.getByTestId('save-settings').click()
    await said(page, 'settings-message', 'Settings saved.')
    // The message was already there from the first save: wait for the stored value instead.
    for (let i = 0; i < 100 && (await h.services.settings.get()).maxFileSizeBytes !== 1.5 * GB; i++)
      await new Promise((r) => setTimeout(r, 100))
    expect((await h.services.settings.get()).maxFileSizeBytes).toBe(1.5 * GB)
    await expect(page.getByTestId('setting-maxFileSizeBytes').inputValue()).resolves.toBe('1.5')
    await expect(page.getByTestId('setting-maxFileSizeBytes-unit').inputValue()).resolves.toBe('GB')

    // Three wrong values; the pair error sits on a field before the other two in the page.
    await page.getByTestId('setting-maxDownloadsCap').fill('50')
    await page.getByTestId('setting-defaultMaxDownloads').fill('100')
    await page.getByTestId('setting-maxFileSizeBytes').fill('0')
    await page.getByTestId('setting-codeLength').fill('3')
    await page.getByTestId('save-settings').click()
    await said(page, 'settings-message', 'Some values are not valid; nothing was saved.')
    await focused(page, 'setting-defaultMaxDownloads')
    await said(
      page,
      'setting-defaultMaxDownloads-error',
      'The default number of downloads can be at most the highest maximum (50).',
    )
    await said(page, 'setting-maxFileSizeBytes-error', 'Enter a size greater than 0, such as 100 MB or 2 GB.')
    await said(page, 'setting-codeLength-error', 'Enter a whole number from 6 to 12.')
    await expect(
      page.getByTestId('setting-defaultMaxDownloads').getAttribute('aria-describedby'),
    ).resolves.toBe('setting-defaultMaxDownloads-error')
    expect(await axeAll(page)).toEqual([])

    // Fixing the first moves the focus to the next one still wrong.
    await page.getByTestId('setting-defaultMaxDownloads').fill('10')
    await page.getByTestId('save-settings').click()
    await page.getByTestId('setting-defaultMaxDownloads-error').waitFor({ state: 'detached' })
    await focused(page, 'setting-maxFileSizeBytes')
    await page.getByTestId('setting-maxFileSizeBytes').fill('100')
    await page.getByTestId('setting-maxFileSizeBytes-unit').selectOption('MB')
    await page.getByTestId('setting-codeLength').fill('8')
    await page.getByTestId('save-settings').click()
    await said(page, 'settings-message', 'Settings saved.')
    expect(await h.services.settings.get()).toMatchObject({
      maxDownloadsCap: 50,
      defaultMaxDownloads: 10,
      maxFileSizeBytes: 100 * MB,
      codeLength: 8,
    })
    await h.services.settings.update({
      maxDownloadsCap: before.maxDownloadsCap,
      defaultMaxDownloads: before.defaultMaxDownloads,
      maxFileSizeBytes: before.maxFileSizeBytes,
      codeLength: before.codeLength,
      previewMaxBytes: before.previewMaxBytes,
    })
    await context.close()
  })

  it('when the audit log is opened, then entries read as sentences in English and in Chinese, without raw action names or ids', async () => {
    const cookie = await adminLogin(h)
    const file = await uploadFile(h, { name: 'audited.txt', data: Buffer.from('audit me') })
    const share = await api(h, 'POST', '/api/share', { files: [file.file] })
    const code = share.body.code as string
    expect((await api(h, 'DELETE', '/api/admin/shares', { code }, cookie)).status).toBe(200)
    const issued = await api(h, 'POST', '/api/admin/authcodes', { scope: 'size', expiresInHours: 2 }, cookie)
    expect(issued.status).toBe(201)
    await api(h, 'PUT', '/api/admin/settings', { maxExpireDays: 29 }, cookie)
    await api(h, 'PUT', '/api/admin/settings', { maxExpireDays: 30 }, cookie)

    const context = await newContext()
    const page = await loggedIn(context)
    await page.getByRole('tab', { name: 'Audit log' }).click()
    const log = page.getByTestId('audit-list')
    await log.waitFor()
    const text = (await log.textContent())!
    expect(text).toMatch(/Admin signed in from (::ffff:)?127\.0\.0\.1/)
    expect(text).toContain(`Share ${code.slice(0, 4)}… deleted (1 file(s))`)
    expect(text).toContain('Authorization code issued (No size limit)')
    expect(text).toContain('Settings changed: Maximum expiry (days)')
    // From the storage test: an edit logs what changed, nothing else.
    expect(text).toContain('Storage instance photos added (Server folder)')
    expect(text).toMatch(/Storage instance photos changed: quota 2 GB(?!,)/)
    expect(text).toContain('Storage instance archive changed: quota 500 MB, disabled')
    expect(text).not.toContain('connection settings')
    expect(text).not.toContain('admin.login')
    expect(text).not.toContain(code)
    expect(text).not.toContain(issued.body.id)
    expect(await axeAll(page)).toEqual([])

    await page.getByTestId('lang').selectOption('zh-CN')
    await page.getByRole('tab', { name: '审计日志' }).waitFor()
    const zh = (await page.getByTestId('audit-list').textContent())!
    expect(zh).toMatch(/管理员从 (::ffff:)?127\.0\.0\.1 登录/)
    expect(zh).toContain(`分享 ${code.slice(0, 4)}… 已删除（1 个文件）`)
    expect(zh).toContain('设置已修改：最长有效期（天）')
    expect(await axeAll(page)).toEqual([])

    // A failed connection test reads in Chinese too (the reason is a code the page translates).
    await page.getByRole('tab', { name: '存储' }).click()
    await page.getByTestId('new-store-kind').selectOption('bucket')
    await page.getByTestId('new-store-endpoint').fill(`http://127.0.0.1:${await closedPort()}`)
    await page.getByTestId('new-store-bucket').fill(BUCKET)
    await page.getByTestId('new-store-accessKey').fill('S3RVER')
    await page.getByTestId('new-store-secretKey').fill('S3RVER')
    await page.getByTestId('new-store-test').click()
    await said(page, 'new-store-test-result', '写入测试文件时连接失败：无法连接服务器')
    await shot(page, 'admin-storage-zh-1280-light')
    expect(await axeAll(page)).toEqual([])
    await page.evaluate(() => localStorage.clear())
    await context.close()
  })

  it('when the whole file ran, then no page logged a CSP violation or an uncaught error', () => {
    expect(pageErrors).toEqual([])
  })
})
