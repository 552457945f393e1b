import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true })
})
afterAll(async () => {
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })

describe('guessing limiter', () => {
  it('when one address fails 10 takes, then the 11th request gets 429 with Retry-After, even with a right code', async () => {
    const { file } = await uploadFile(h, { name: 'g.txt', data: Buffer.from('g') })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file] })).body
    for (let i = 0; i < 10; i++) {
      const res = await api(h, 'POST', '/api/take', { code: String(10_000_000 + i) }, from('192.0.2.10'))
      expect(res.status).toBe(404)
    }
    const blocked = await api(h, 'POST', '/api/take', { code }, from('192.0.2.10'))
    expect(blocked.status).toBe(429)
    expect(blocked.body.error.code).toBe('rate_limit_exceeded')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(500)
    const dl = await fetch(`${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`, {
      headers: from('192.0.2.10'),
    })
    expect(dl.status).toBe(429)
    // Another address is not affected.
    expect((await api(h, 'POST', '/api/take', { code }, from('192.0.2.11'))).status).toBe(200)
  })

  it('when failures come from many addresses, then the global limit stops everyone', async () => {
    await h.services.settings.update({ takeFailuresGlobal: 25, takeFailuresPerIp: 1000 })
    let status = 0
    for (let i = 0; i < 40 && status !== 429; i++)
      status = (
        await api(h, 'POST', '/api/take', { code: String(20_000_000 + i) }, from(`198.51.100.${i + 1}`))
      ).status
    expect(status).toBe(429)
    const fresh = await api(h, 'POST', '/api/take', { code: '12345678' }, from('203.0.113.200'))
    expect(fresh.status).toBe(429)
  })
})
