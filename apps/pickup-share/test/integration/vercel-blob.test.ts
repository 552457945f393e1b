import { createHash, randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { put } from '@vercel/blob'
import { upload } from '@vercel/blob/client'
import { adminLogin, api, type Harness, startHarness, testDeps } from '../support/harness.ts'

const deps = testDeps()
let h: Harness
let admin: Record<string, string>

beforeAll(async () => {
  h = await startHarness(deps)
  admin = await adminLogin(h)
  // The client reads its API base from here (as it would NEXT_PUBLIC_VERCEL_BLOB_API_URL in a browser).
  process.env.VERCEL_BLOB_API_URL = `${h.url}/api/blob/vercel`
  process.env.VERCEL_BLOB_RETRIES = '0'
})
afterAll(async () => {
  delete process.env.VERCEL_BLOB_API_URL
  await h.close()
})

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
const reserved = async () =>
  (await api(h, 'GET', '/api/admin/stores', undefined, admin)).body.items.find(
    (s: { name: string }) => s.name === 'blob',
  ).reservedBytes as number

/** The uploader's proof for /api/share: the client hands back `url`, which carries it in its fragment. */
const proofOf = (url: string) => new URLSearchParams(new URL(url).hash.slice(1)).get('proof') ?? ''

async function shareAndDownload(
  blob: { pathname: string; url: string },
  name: string,
  size: number,
): Promise<Buffer> {
  const { pathname } = blob
  const shared = await api(h, 'POST', '/api/share', {
    files: [{ name, size, type: 'application/pdf', pathname, store: 'blob', proof: proofOf(blob.url) }],
    maxDownloads: 1,
  })
  expect(shared.status).toBe(200)
  const res = await fetch(
    `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(pathname)}`,
  )
  expect(res.status).toBe(200)
  return Buffer.from(await res.arrayBuffer())
}

describe('the unmodified @vercel/blob client against /api/upload', () => {
  it('when upload() sends a file with handleUploadUrl /api/upload, then it is stored, the reservation is the real size, and the file shares and downloads byte-identical', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 17)
    const before = await reserved()
    const blob = await upload('docs/report.pdf', new Blob([data], { type: 'application/pdf' }), {
      access: 'public',
      handleUploadUrl: `${h.url}/api/upload`,
      contentType: 'application/pdf',
    })
    expect(blob.pathname).toMatch(/^[0-9a-f]{32}\/report\.pdf$/)
    expect(blob.contentType).toBe('application/pdf')
    // The permission reserved the site's maximum while the size was unknown; now exactly the file.
    expect(await reserved()).toBe(before + data.length)
    const downloaded = await shareAndDownload(blob, 'report.pdf', data.length)
    expect(sha(downloaded)).toBe(sha(data))
  })

  it('when the body is a stream of unknown length, then it is stored as it arrives', async () => {
    const data = randomBytes(2 * 1024 * 1024)
    const blob = await upload(
      'streamed.pdf',
      Readable.from([data.subarray(0, 1_000_000), data.subarray(1_000_000)]),
      {
        access: 'public',
        handleUploadUrl: `${h.url}/api/upload`,
      },
    )
    const downloaded = await shareAndDownload(blob, 'streamed.pdf', data.length)
    expect(sha(downloaded)).toBe(sha(data))
  })

  it('when a client token is used for another pathname, then the client reports the mismatch and nothing is stored', async () => {
    const token = await api(h, 'POST', '/api/upload', {
      type: 'blob.generate-client-token',
      payload: { pathname: 'a.txt', clientPayload: null, multipart: false },
    })
    expect(token.status).toBe(200)
    expect(token.headers.get('cache-control')).toBe('no-store')
    expect(token.body.clientToken).toMatch(/^vercel_blob_client_pickupshare_[A-Za-z0-9+/=]+$/)
    await expect(put('b.txt', 'hello', { access: 'public', token: token.body.clientToken })).rejects.toThrow(
      /pathname/i,
    )
    // The token's own pathname works, once.
    const ok = await put('a.txt', 'hello', { access: 'public', token: token.body.clientToken })
    expect(ok.pathname).toMatch(/\/a\.txt$/)
    await expect(put('a.txt', 'again', { access: 'public', token: token.body.clientToken })).rejects.toThrow(
      /already exists at this pathname/,
    )
  })

  it('when one client token is used by two uploads at once, then exactly one is stored and the reservation is its size', async () => {
    const before = await reserved()
    const token = await api(h, 'POST', '/api/upload', {
      type: 'blob.generate-client-token',
      payload: { pathname: 'race.bin', clientPayload: null, multipart: false },
    })
    const bodies = [randomBytes(300_000), randomBytes(200_000)]
    const results = await Promise.allSettled(
      bodies.map((b) => put('race.bin', b, { access: 'public', token: token.body.clientToken })),
    )
    const stored = results.filter((r) => r.status === 'fulfilled')
    expect(stored).toHaveLength(1)
    const winner = bodies[results.indexOf(stored[0]!)]!
    expect(await reserved()).toBe(before + winner.length)
    const downloaded = await shareAndDownload(
      (stored[0] as PromiseFulfilledResult<{ pathname: string; url: string }>).value,
      'race.bin',
      winner.length,
    )
    expect(sha(downloaded)).toBe(sha(winner))
  })

  it('when the token request is malformed or asks for multipart, then it is a 400 in the envelope', async () => {
    const multipart = await api(h, 'POST', '/api/upload', {
      type: 'blob.generate-client-token',
      payload: { pathname: 'x.bin', clientPayload: null, multipart: true },
    })
    expect(multipart.status).toBe(400)
    const badName = await api(h, 'POST', '/api/upload', {
      type: 'blob.generate-client-token',
      payload: { pathname: 'dir/..', clientPayload: null, multipart: false },
    })
    expect(badName.status).toBe(400)
    const forged = await fetch(`${h.url}/api/blob/vercel/?pathname=x.bin`, {
      method: 'PUT',
      headers: { authorization: 'Bearer vercel_blob_client_pickupshare_Zm9v' },
      body: 'x',
    })
    expect(forged.status).toBe(403)
  })
})
