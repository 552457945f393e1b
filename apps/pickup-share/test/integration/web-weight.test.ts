import { readFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { type Harness, startHarness, testDeps } from '../support/harness.ts'
import { ensureWebBuilt } from '../browser/support.ts'

// Issue 20 items 6 and 8: precompressed assets with Vary, the admin area in its own chunk, and
// the site's own 404 page for unknown page addresses (API paths keep their JSON envelope).
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  ensureWebBuilt()
  h = await startHarness(deps)
}, 180_000)
afterAll(async () => {
  await h.close()
})

/** A raw GET (no decoding): status, headers and the bytes as they travel. */
function rawGet(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>(
    (resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }),
          )
        })
        .on('error', reject)
    },
  )
}

const WEB = path.resolve(__dirname, '../../dist/web')

describe('compressed pages', () => {
  it('when the script is asked with br, gzip or neither, then it comes precompressed (or plain) with Vary: Accept-Encoding and the same bytes', async () => {
    const html = (await rawGet(`${h.url}/`)).body.toString()
    const script = html.match(/\/assets\/index-[\w-]+\.js/)![0]
    const original = readFileSync(path.join(WEB, script))
    const br = await rawGet(`${h.url}${script}`, { 'accept-encoding': 'gzip, deflate, br' })
    expect(br.headers['content-encoding']).toBe('br')
    expect(br.headers['vary']).toMatch(/Accept-Encoding/i)
    expect(br.headers['content-type']).toMatch(/javascript/)
    expect(br.headers['cache-control']).toBe('public, max-age=31536000, immutable')
    expect(brotliDecompressSync(br.body).equals(original)).toBe(true)
    expect(br.body.length).toBeLessThan(original.length / 2)
    const gz = await rawGet(`${h.url}${script}`, { 'accept-encoding': 'gzip' })
    expect(gz.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(gz.body).equals(original)).toBe(true)
    const refused = await rawGet(`${h.url}${script}`, { 'accept-encoding': 'br;q=0, gzip;q=0' })
    expect(refused.headers['content-encoding']).toBeUndefined()
    expect(refused.headers['vary']).toMatch(/Accept-Encoding/i)
    expect(refused.body.equals(original)).toBe(true)
    const page = await rawGet(`${h.url}/pickup`, { 'accept-encoding': 'br' })
    expect(page.headers['content-encoding']).toBe('br')
    expect(page.headers['cache-control']).toBe('no-cache')
    expect(page.headers['content-security-policy']).toContain("script-src 'self'")
  })
  // The send page's weight on the wire is proven where a browser really loads it (lazy chunks
  // included): browser/downloads.test.ts.
})

describe('the 404 page', () => {
  it('when a browser asks for an unknown page, then 404 with the HTML document (its script shows the not-found page)', async () => {
    const res = await rawGet(`${h.url}/no/such/page`, { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' })
    expect(res.status).toBe(404)
    expect(res.headers['content-type']).toMatch(/^text\/html/)
    expect(res.body.toString()).toContain('<div id="app">')
  })

  it('when an API client asks for an unknown path, or anything under /api/, then the JSON envelope', async () => {
    for (const [url, accept] of [
      ['/no/such/page', 'application/json'],
      ['/no/such/page', '*/*'],
      ['/api/nothing', 'text/html'],
    ] as const) {
      const res = await rawGet(`${h.url}${url}`, { accept })
      expect(res.status).toBe(404)
      expect(res.headers['content-type']).toMatch(/json/)
      expect(JSON.parse(res.body.toString()).error.code).toBe('not_found')
    }
  })
})
