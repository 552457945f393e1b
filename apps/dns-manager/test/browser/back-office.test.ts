import { mkdirSync } from 'node:fs'
import path from 'node:path'
import {
  axeSerious,
  CHROMIUM,
  CHROMIUM_ARGS,
  CHROMIUM_NEED,
  ensureWebBuilt,
  screenshotDir,
} from '@quartet/web-pages/testing'
import { describeWhen, missingNeeds, request } from '@quartet/core/testing'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { unique, useDeps } from '../helpers.ts'
import { type BackOffice, freeZone, PUBLIC_URL, startBackOffice } from '../support/back-office.ts'

const APP_DIR = path.resolve(__dirname, '..', '..')
const SCREENSHOTS = screenshotDir(APP_DIR)

const BROWSER_NEEDS = { programs: [CHROMIUM_NEED] }
const haveChromium = missingNeeds(BROWSER_NEEDS).length === 0

jest.setTimeout(180_000)

const deps = useDeps()
let bo: BackOffice
let browser: Browser
const pageErrors: string[] = []

beforeAll(async () => {
  if (!haveChromium) return
  ensureWebBuilt(APP_DIR)
  bo = await startBackOffice(deps)
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS })
}, 240_000)

afterAll(async () => {
  await browser?.close()
  await bo?.close()
})

async function newContext(
  options: { locale?: string; width?: number; dark?: boolean } = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({
    baseURL: bo.url,
    locale: options.locale ?? 'en-US',
    colorScheme: options.dark ? 'dark' : 'light',
    viewport: { width: options.width ?? 1280, height: 900 },
  })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: bo.url })
  context.on('page', (page) => {
    page.on('console', (msg) => {
      if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text())
    })
    page.on('pageerror', (err) => pageErrors.push(`page error: ${err.message}`))
  })
  return context
}

/** The mailed link, opened in this browser (its host is PUBLIC_URL's; the test server is elsewhere). */
function localLink(text: string, pathPrefix: string): string {
  const escaped = `${PUBLIC_URL}${pathPrefix}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const m = new RegExp(`${escaped}\\?[^\\s]+`).exec(text)
  if (!m) throw new Error(`no ${pathPrefix} link in:\n${text}`)
  return m[0].slice(PUBLIC_URL.length)
}

async function expectAccessible(page: Page, name: string) {
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: path.join(SCREENSHOTS, `dns-${name}.png`), fullPage: true })
  expect({ page: name, violations: await axeSerious(page) }).toEqual({ page: name, violations: [] })
}

/** Signs up through the pages and the mail link; the page is left on the overview, signed in. */
async function signUpInBrowser(page: Page, email: string) {
  await page.goto('/account/signup')
  await page.getByLabel('E-mail address').fill(email)
  await page.getByTestId('signup-submit').click()
  await page.getByTestId('signup-sent').waitFor()
  const mail = await bo.smtp.mailTo(email)
  expect(mail.subject).toBe('Finish signing up')
  await page.goto(localLink(mail.text, '/account/signup/complete'))
  await expect(page.getByTestId('link-email').textContent()).resolves.toContain(email)
  await expectAccessible(page, 'signup-complete')
  await page.getByLabel('New password').fill('correct horse battery')
  await page.getByTestId('complete-submit').click()
  await page.waitForURL('**/account')
  await page.getByTestId('account-email').waitFor()
}

describeWhen(BROWSER_NEEDS, 'the back office in a real browser (chromium)', () => {
  it('when a person signs up by mail link, then they register a subdomain, add records, make an API key, switch the API off and on, and delete the subdomain', async () => {
    const zone = await freeZone(deps)
    const email = `${unique('holder')}@example.test`
    const context = await newContext()
    const page = await context.newPage()

    await page.goto('/account/signup')
    await expectAccessible(page, 'signup')
    await signUpInBrowser(page, email)
    await expectAccessible(page, 'overview-empty')

    // Register: availability as the name is typed, then the subdomain page.
    await page.getByTestId('register-link').click()
    await page.getByTestId('zone').selectOption(zone)
    await page.getByLabel('Name', { exact: true }).fill('www')
    const availability = page.getByTestId('availability')
    await availability.filter({ hasText: `www.${zone} is reserved.` }).waitFor()
    expect(await availability.textContent()).toBe(`www.${zone} is reserved.`)
    await page.getByLabel('Name', { exact: true }).fill('myhome')
    await availability.filter({ hasText: `myhome.${zone} is available.` }).waitFor()
    expect(await availability.textContent()).toBe(`myhome.${zone} is available.`)
    await expectAccessible(page, 'register')
    await page.getByTestId('register-submit').click()
    await page.waitForURL(/\/account\/subdomains\/\d+$/)
    const subdomainId = Number(/(\d+)$/.exec(page.url())![1])
    await page.getByRole('heading', { name: `myhome.${zone}` }).waitFor()

    // An A record: first a wrong address, and the API's own message next to the field.
    await page.getByTestId('add-record').click()
    await page.getByTestId('record-content').fill('999.1.1.1')
    await page.getByTestId('record-save').click()
    const fieldError = await page.getByTestId('record-field-error').textContent()
    await page.getByTestId('record-content').fill('93.184.215.14')
    await page.getByTestId('record-save').click()
    await page.getByTestId('record-A').waitFor()
    // A TXT record.
    await page.getByTestId('add-record').click()
    await page.getByTestId('record-type').selectOption('TXT')
    await page.getByTestId('record-content').fill('v=spf1 -all')
    await page.getByTestId('record-save').click()
    await page.getByTestId('record-TXT').waitFor()
    await page.getByTestId('zone-file-toggle').click()
    await expect(page.getByTestId('zone-file').textContent()).resolves.toMatch(/93\.184\.215\.14/)
    await expectAccessible(page, 'subdomain')

    // An API key: the secret is shown once, with a copy button; the key works on /rest/auth/verify.
    await page.getByRole('link', { name: 'API access' }).click()
    await page.getByTestId('create-key').click()
    const apiKey = (await page.getByTestId('new-api-key').textContent())!.trim()
    const apiSecret = (await page.getByTestId('new-api-secret').textContent())!.trim()
    await page.getByTestId('copy-secret').click()
    await expect(page.evaluate('navigator.clipboard.readText()')).resolves.toBe(apiSecret)
    await expectAccessible(page, 'keys')
    // The ACME-only kind, for this subdomain: listed as such; the API knows its scope.
    await page.getByTestId('acme-subdomain').selectOption({ label: `myhome.${zone}` })
    await page.getByTestId('create-acme-key').click()
    await page.getByTestId('key-table').getByText(`ACME-only · myhome.${zone}`).waitFor()
    const headers = { 'X-API-Key': apiKey, 'X-API-Secret': apiSecret }
    const verified = await request(bo.url).post('/rest/auth/verify').set(headers).expect(200)
    expect(verified.body.account.api_key).toBe(apiKey)
    const listed = await request(bo.url).get('/rest/keys').set(headers).expect(200)
    expect(
      listed.body.keys.map((k: { scope: string; subdomain_id: number | null }) => [k.scope, k.subdomain_id]),
    ).toEqual(
      expect.arrayContaining([
        ['full', null],
        ['acme', subdomainId],
      ]),
    )
    // The page showed the same validation message the API gives for the same input.
    const sameInput = await request(bo.url)
      .post(`/rest/subdomains/${subdomainId}/records`)
      .set(headers)
      .send({ type: 'A', name: '@', content: '999.1.1.1' })
      .expect(400)
    expect(fieldError).toBe(sameInput.body.error.message)
    // The record resolves as the API serves it.
    const records = await request(bo.url)
      .get(`/rest/subdomains/${subdomainId}/records`)
      .set(headers)
      .expect(200)
    expect(
      records.body.dns_records.map((r: { type: string; content: string }) => `${r.type} ${r.content}`).sort(),
    ).toEqual(['A 93.184.215.14', 'TXT v=spf1 -all'])

    // The API switch: off, and the API refuses at once; on again.
    const apiSwitch = page.getByRole('switch', { name: 'API access' })
    await expect(apiSwitch.getAttribute('aria-checked')).resolves.toBe('true')
    await apiSwitch.focus()
    await page.keyboard.press('Space')
    await page.getByTestId('api-switch-state').getByText('off').waitFor()
    const refused = await request(bo.url).post('/rest/auth/verify').set(headers).expect(403)
    expect(refused.body.error.code).toBe('api_access_disabled')
    await apiSwitch.click()
    await page.getByTestId('api-switch-state').getByText('on').waitFor()
    await request(bo.url).post('/rest/auth/verify').set(headers).expect(200)

    // The audit log shows what the API and the pages did.
    await page.getByRole('link', { name: 'Audit log' }).click()
    await page.getByTestId('audit-table').getByText('subdomains.create').waitFor()
    await expectAccessible(page, 'audit')

    // Delete, with a confirmation that names what goes.
    await page.goto(`/account/subdomains/${subdomainId}`)
    await page.getByTestId('delete-subdomain').click()
    await expect(page.getByTestId('confirm-delete').textContent()).resolves.toContain(
      `myhome.${zone} and its 2 record(s)`,
    )
    await expectAccessible(page, 'confirm-delete')
    await page.getByTestId('confirm-delete-yes').click()
    await page.waitForURL('**/account?deleted=*')
    await request(bo.url).get(`/rest/subdomains/${subdomainId}`).set(headers).expect(404)
    await page.getByText('You have no subdomain yet.').waitFor()
    await context.close()
    expect(pageErrors).toEqual([])
  })

  it('when the pages are used in Simplified Chinese at phone width, then they are translated and accessible', async () => {
    const context = await newContext({ locale: 'zh-CN', width: 375 })
    const page = await context.newPage()
    await page.goto('/account/signin')
    await expect(page.evaluate('document.documentElement.lang')).resolves.toBe('zh-Hans')
    await page.getByRole('heading', { name: '登录' }).waitFor()
    await expectAccessible(page, 'signin-zh-phone')
    const scroll = await page.evaluate('document.documentElement.scrollWidth')
    expect(scroll).toBeLessThanOrEqual(375)
    await page.goto('/account/reset')
    await expectAccessible(page, 'reset-zh-phone')
    await context.close()
  })

  it('when the sign-in form is used by keyboard only, then focus is visible and it signs in', async () => {
    const email = `${unique('kbd')}@example.test`
    const context = await newContext()
    const page = await context.newPage()
    await signUpInBrowser(page, email)
    await page.getByTestId('signout').click()
    await page.waitForURL('**/account/signin')
    await page.getByLabel('E-mail address').focus()
    await page.keyboard.type(email)
    await page.keyboard.press('Tab')
    await page.keyboard.type('wrong password here')
    await page.keyboard.press('Enter')
    await page.getByTestId('signin-error').waitFor()
    await expectAccessible(page, 'signin-error')
    await page.getByLabel('Password').fill('correct horse battery')
    await page.getByLabel('Password').focus()
    const outline = await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')
    expect(outline).not.toBe('none')
    await page.keyboard.press('Enter')
    await page.waitForURL('**/account')
    await page.getByTestId('account-email').waitFor()
    await page.goto('/account/security')
    await expectAccessible(page, 'security')
    await context.close()
  })

  it('when a password is reset through the mailed link in dark mode, then each page is accessible and the new password signs in', async () => {
    const email = `${unique('reset')}@example.test`
    const context = await newContext({ dark: true })
    const page = await context.newPage()
    await signUpInBrowser(page, email)
    await expectAccessible(page, 'overview-dark')
    await page.getByTestId('signout').click()
    await page.waitForURL('**/account/signin')
    await page.getByRole('link', { name: 'Forgot your password?' }).click()
    await page.getByLabel('E-mail address').fill(email)
    await page.getByTestId('reset-submit').click()
    await page.getByTestId('reset-sent').waitFor()
    await expectAccessible(page, 'reset-sent-dark')
    const mail = await bo.smtp.mailTo(email)
    await page.goto(localLink(mail.text, '/account/reset/complete'))
    await expectAccessible(page, 'reset-complete-dark')
    await page.getByLabel('New password', { exact: true }).fill('a brand new password')
    await page.getByTestId('complete-submit').click()
    await page.getByTestId('reset-done').waitFor()
    // The link is spent: opened again, the form says so.
    await page.goto(localLink(mail.text, '/account/reset/complete'))
    await page.getByLabel('New password', { exact: true }).fill('yet another password')
    await page.getByTestId('complete-submit').click()
    await page.getByTestId('link-invalid').waitFor()
    await page.goto('/account/signin')
    await page.getByLabel('E-mail address').fill(email)
    await page.getByLabel('Password').fill('a brand new password')
    await page.getByTestId('signin-submit').click()
    await page.waitForURL('**/account')
    await page.getByTestId('account-email').waitFor()
    await context.close()
  })

  it('when the whole suite ran, then no page logged a Content-Security-Policy violation or an uncaught error', () => {
    expect(pageErrors).toEqual([])
  })
})
