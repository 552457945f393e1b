import { api, type Harness, startHarness, testDeps } from '../support/harness.ts'

// Issue 42 item 5: uploads take no cross-origin requests (README "Cross-origin uploads"). tus used
// to answer `Access-Control-Allow-Origin: *` while its preflight left out X-Upload-Token, and
// /api/upload had no CORS: half an offer. Now neither path sends any CORS header, to a preflight
// or to the request itself, so a page on another origin is refused by its browser at once,
// while the send page (same origin) needs none.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const ELSEWHERE = 'https://uploader.example'
const corsHeaders = (res: Response) => {
  const names: string[] = []
  res.headers.forEach((_value, name) => {
    if (name.startsWith('access-control-')) names.push(name)
  })
  return names
}

describe('uploads from another origin', () => {
  it('when another origin preflights or sends a tus creation, then no CORS header is answered, and the same-origin upload still works', async () => {
    const grant = await api(h, 'POST', '/api/upload', { store: 'blob', name: 'x.bin', size: 10 })
    expect(grant.status).toBe(200)
    const { endpoint, headers } = grant.body.tus as { endpoint: string; headers: Record<string, string> }
    const preflight = await fetch(`${h.url}${endpoint}`, {
      method: 'OPTIONS',
      headers: {
        origin: ELSEWHERE,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'tus-resumable,upload-length,upload-metadata,x-upload-token',
      },
    })
    expect(corsHeaders(preflight)).toEqual([])
    const created = await fetch(`${h.url}${endpoint}`, {
      method: 'POST',
      headers: { origin: ELSEWHERE, 'tus-resumable': '1.0.0', 'upload-length': '10', ...headers },
    })
    // The server itself is not a browser: it still answers (a same-origin page would be fine).
    expect(created.status).toBe(201)
    expect(corsHeaders(created)).toEqual([])
    const patched = await fetch(new URL(created.headers.get('location')!, h.url), {
      method: 'PATCH',
      headers: {
        origin: ELSEWHERE,
        'tus-resumable': '1.0.0',
        'upload-offset': '0',
        'content-type': 'application/offset+octet-stream',
      },
      body: new Uint8Array(10),
    })
    expect(patched.status).toBe(204)
    expect(corsHeaders(patched)).toEqual([])
  })

  it('when another origin preflights or posts /api/upload, then no CORS header is answered', async () => {
    const preflight = await fetch(`${h.url}/api/upload`, {
      method: 'OPTIONS',
      headers: { origin: ELSEWHERE, 'access-control-request-method': 'POST' },
    })
    expect(corsHeaders(preflight)).toEqual([])
    const posted = await fetch(`${h.url}/api/upload`, {
      method: 'POST',
      headers: { origin: ELSEWHERE, 'content-type': 'application/json' },
      body: JSON.stringify({ store: 'blob', name: 'y.bin', size: 10 }),
    })
    expect(corsHeaders(posted)).toEqual([])
  })
})
