import { hotReadAnswers } from '@quartet/core/testing/operations'
import { webOperations } from '../../src/http/web.ts'
import { api, type Harness, startHarness, testDeps } from '../support/harness.ts'
import { ensureWebBuilt } from '../browser/support.ts'

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  ensureWebBuilt()
  h = await startHarness(deps)
}, 180_000)
afterAll(async () => {
  await h.close()
})

describe('web pages: serving', () => {
  it.each(['/', '/pickup', '/admin'])(
    'when %s is requested, then the page comes with no-cache, a CSP without inline script, and no inline script',
    async (page) => {
      const res = await fetch(`${h.url}${page}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(res.headers.get('cache-control')).toBe('no-cache')
      const csp = res.headers.get('content-security-policy')!
      expect(csp).toContain("script-src 'self'")
      expect(csp).toContain("script-src-attr 'none'")
      expect(csp).toContain("style-src 'self'")
      expect(csp).toContain("frame-ancestors 'none'")
      // The audio and video an encrypted share's pickup page decrypts play from a blob.
      expect(csp).toContain("media-src 'self' blob:")
      expect(csp).not.toContain('unsafe-inline')
      expect(csp).not.toContain('unsafe-eval')
      const html = await res.text()
      expect(html).toMatch(/<script type="module" crossorigin src="\/assets\/index-[\w-]+\.js"><\/script>/)
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/)
      expect(html).not.toMatch(/<style[\s>]/)
    },
  )

  it.each(['bytes=-0', 'bytes=5-1', 'bytes=abc', 'bytes=0-1', 'bytes=99999999-'])(
    'when a page, an asset or the icon is asked for with Range: %s, then the whole file comes, 200, as without it',
    async (range) => {
      const html = await (await fetch(`${h.url}/`)).text()
      const asset = html.match(/\/assets\/index-[\w-]+\.js/)![0]
      for (const target of ['/', '/pickup', '/admin', asset, '/favicon.svg']) {
        const whole = await (await fetch(`${h.url}${target}`)).arrayBuffer()
        const res = await fetch(`${h.url}${target}`, { headers: { range } })
        expect([target, res.status]).toEqual([target, 200])
        expect(res.headers.get('content-range')).toBeNull()
        expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(whole))).toBe(true)
      }
    },
  )

  it('when a hashed asset is requested, then it is cached for a year as immutable; an unknown one is a 404', async () => {
    const html = await (await fetch(`${h.url}/`)).text()
    for (const asset of html.match(/\/assets\/index-[\w-]+\.(js|css)/g)!) {
      const res = await fetch(`${h.url}${asset}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      await res.arrayBuffer()
    }
    const missing = await fetch(`${h.url}/assets/index-00000000.js`)
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found')
  })

  it('when the S3 endpoint is configured, then the CSP lets the pages upload to it (path and virtual-host style)', async () => {
    const { uploadOrigins, webHelmetOptions } = await import('../../src/http/web.ts')
    const origins = uploadOrigins({
      S3_ENDPOINT: 'https://s3.example.test:9000',
      S3_BUCKET: 'drop',
      WEB_CONNECT_SRC: ['https://other.example.test'],
    })
    expect(origins.sort()).toEqual([
      'https://drop.s3.example.test:9000',
      'https://other.example.test',
      'https://s3.example.test:9000',
    ])
    const csp = webHelmetOptions(origins).contentSecurityPolicy as { directives: Record<string, string[]> }
    expect(csp.directives['connect-src']).toEqual(["'self'", ...origins])
  })
})

describe('web pages: GET /api/site', () => {
  it('when it is asked before express and of express alone (core hotReadAnswers), then the answers agree', async () => {
    const { hot, express } = await hotReadAnswers(h.app, webOperations, [
      { operation: 'siteInfo', path: '/api/site' },
    ])
    expect(hot.map((answer) => answer.status)).toEqual([200])
    expect(hot).toEqual(express)
  })

  it('when the pages ask for the site limits, then they get the enabled stores and the current settings', async () => {
    const before = await api(h, 'GET', '/api/site')
    expect(before.status).toBe(200)
    expect(before.headers.get('cache-control')).toBe('no-store')
    expect(before.body.stores).toContain('blob')
    expect(before.body).toMatchObject({ codeLength: 12, maxExpireDays: 30, unlimitedEnabled: false })
    // Only public limits: nothing about guessing or login budgets.
    expect(Object.keys(before.body).sort()).toEqual([
      'codeLength',
      'defaultExpireDays',
      'defaultMaxDownloads',
      'maxDownloadsCap',
      'maxExpireDays',
      'maxFileSizeBytes',
      'previewEnabled',
      'previewMaxBytes',
      'stores',
      'textMaxBytes',
      'unlimitedEnabled',
    ])
    await h.services.settings.update({ maxExpireDays: 12, codeLength: 10, unlimitedEnabled: true })
    const after = await api(h, 'GET', '/api/site')
    expect(after.body).toMatchObject({ maxExpireDays: 12, codeLength: 10, unlimitedEnabled: true })
  })
})
