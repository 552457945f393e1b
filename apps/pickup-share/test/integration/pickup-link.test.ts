import { createHash } from 'node:crypto'
import { captureLogger } from '@quartet/core/testing'
import { api, flood, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
const log = captureLogger()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true, logger: log.logger })
})
afterAll(async () => {
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex')

async function newShare(name = 'linked.txt', maxDownloads = 5) {
  const data = Buffer.from(`contents of ${name}`)
  const { file } = await uploadFile(h, { name, data })
  const res = await api(h, 'POST', '/api/share', { files: [file], maxDownloads })
  expect(res.status).toBe(200)
  return { ...(res.body as { code: string; token: string; link: string }), file, data }
}

let receivers = 0
/**
 * Another receiver (address) per call unless told: since issue 42 one receiver's downloads of a
 * file within the resume window are one download, so counting tests ask as many receivers.
 */
const download = (
  query: Record<string, string>,
  headers: Record<string, string> = { 'x-forwarded-for': `10.43.${++receivers >> 8}.${receivers & 255}` },
) => fetch(`${h.url}/api/download?${new URLSearchParams(query).toString()}`, { headers })

describe('the pickup link', () => {
  it('when a share is created, then the answer has the code, a 128-bit token and a link carrying it in the fragment', async () => {
    const { code, token, link } = await newShare()
    expect(code).toMatch(/^\d{12}$/)
    expect(token).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(Buffer.from(token, 'base64url')).toHaveLength(16)
    expect(link).toBe(`${h.url}/pickup#${token}`)
    // Only the token's hash is kept.
    const rows = await deps.database.query<{ link_token_hash: string }>(
      `SELECT link_token_hash FROM share WHERE code = $1`,
      [code],
    )
    expect(rows.rows[0]!.link_token_hash).toBe(sha256(token))
    const dump = JSON.stringify((await deps.database.query(`SELECT * FROM share`)).rows)
    expect(dump).not.toContain(token)
  })

  it('when the token is used, then take and download work like the code, counting the same downloads', async () => {
    const { code, token, file, data } = await newShare('counted.txt', 2)
    const taken = await api(h, 'POST', '/api/take', { token })
    expect(taken.status).toBe(200)
    expect(taken.headers.get('cache-control')).toBe('no-store')
    expect(taken.body).toMatchObject({ manifest: { code, files: [{ name: 'counted.txt' }] }, remaining: 2 })
    const first = await download({ token, path: file.pathname })
    expect(first.status).toBe(200)
    expect(Buffer.from(await first.arrayBuffer()).equals(data)).toBe(true)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(1)
    expect((await download({ code, path: file.pathname })).status).toBe(200)
    // Used up, by either way.
    expect((await api(h, 'POST', '/api/take', { token })).status).toBe(410)
    // Also while the share is being removed right after the last download (ended-race.test.ts).
    expect((await download({ token, path: file.pathname })).status).toBe(410)
  })

  it('when a share is picked up by code and by link, then neither the code nor the token is in any log line', async () => {
    const { code, token, file } = await newShare('quiet.txt')
    await api(h, 'POST', '/api/take', { token })
    await api(h, 'POST', '/api/take', { code })
    for (const query of [{ token }, { code }] as Array<Record<string, string>>) {
      const res = await download({ ...query, path: file.pathname })
      expect(res.status).toBe(200)
      await res.arrayBuffer()
    }
    await api(h, 'GET', `/api/download?token=${token}&path=nothing-here`)
    const lines = JSON.stringify(log.lines)
    expect(
      log.lines.some((l) => String((l.req as { url?: string })?.url ?? '').startsWith('/api/download?')),
    ).toBe(true)
    expect(lines).not.toContain(token)
    expect(lines).not.toContain(code)
  })

  it('when an address has spent its guessing budget, then its link still opens the share', async () => {
    const { code, token, file } = await newShare()
    for (let i = 0; i < 10; i++)
      await api(h, 'POST', '/api/take', { code: String(300_000_000_000 + i) }, from('192.0.2.50'))
    expect((await api(h, 'POST', '/api/take', { code }, from('192.0.2.50'))).status).toBe(429)
    expect((await api(h, 'POST', '/api/take', { token }, from('192.0.2.50'))).status).toBe(200)
    expect((await download({ token, path: file.pathname }, from('192.0.2.50'))).status).toBe(200)
  })

  it('when tokens are wrong, then each is a 404 that spends no guessing budget', async () => {
    const { code } = await newShare()
    for (let i = 0; i < 30; i++) {
      const res = await api(
        h,
        'POST',
        '/api/take',
        { token: `wrong-token-${String(i).padStart(10, '0')}` },
        from('192.0.2.60'),
      )
      expect(res.status).toBe(404)
      expect(res.body.error.code).toBe('share_not_found')
    }
    expect((await api(h, 'POST', '/api/take', { code }, from('192.0.2.60'))).status).toBe(200)
  })

  it.each([
    ['both code and token', { code: '123456789012', token: 'AAAAAAAAAAAAAAAAAAAAAA' }, 'body: give either'],
    ['neither', {}, 'body: give either'],
    ['a malformed token', { token: 'short' }, 'body.token: must be the token of a pickup link'],
  ])('when a take has %s, then 400 names the problem', async (_what, body, message) => {
    const res = await api(h, 'POST', '/api/take', body)
    expect(res.status).toBe(400)
    expect(res.body.error.message.startsWith(message)).toBe(true)
  })

  it('when a download names both code and token, then 400', async () => {
    const { code, token, file } = await newShare()
    const res = await download({ code, token, path: file.pathname })
    expect(res.status).toBe(400)
  })

  it('when a share was made before links had tokens, then its code still works', async () => {
    const { code } = await newShare()
    await deps.database.query(`UPDATE share SET link_token_hash = NULL WHERE code = $1`, [code])
    expect((await api(h, 'POST', '/api/take', { code })).status).toBe(200)
  })

  // Last: the flood leaves this file's global count spent for the rest of its window.
  it('when 1,000 wrong codes from 100 addresses spend the global budget and fill the throttle, then the receiver with the link still takes and downloads', async () => {
    const { token, file, data } = await newShare('after-the-flood.txt')
    await h.services.settings.update({ takeFailuresGlobal: 100, guessThrottlePerMinute: 10 })
    try {
      const wrong = await flood(1000, (i) =>
        api(
          h,
          'POST',
          '/api/take',
          { code: String(400_000_000_000 + i) },
          from(`198.51.100.${(i % 100) + 1}`),
        ),
      )
      expect(wrong.filter((r) => r.status === 429).length).toBeGreaterThan(800)
      const receivers = await Promise.all(
        ['198.51.100.1', '203.0.113.9', '2001:db8:1::1'].map((ip) =>
          api(h, 'POST', '/api/take', { token }, from(ip)),
        ),
      )
      expect(receivers.map((r) => r.status)).toEqual([200, 200, 200])
      const dl = await download({ token, path: file.pathname }, from('198.51.100.1'))
      expect(dl.status).toBe(200)
      expect(Buffer.from(await dl.arrayBuffer()).equals(data)).toBe(true)
    } finally {
      await h.services.settings.update({ takeFailuresGlobal: 600, guessThrottlePerMinute: 30 })
    }
  })
})
