import { MemoryKeyValueStore } from '@quartet/core/kv'
import { api, flood, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// Per-address limits. The global budget and its throttle have their own file (guessing-global),
// since every test of a file shares one kv and so one global count.
// Memory kv: exact counts under heavy concurrency are this file's point. With Redis on a loaded
// machine, a limiter call slower than 0.5 s is counted in the process instead (the documented
// fallback), which blurs them; pickup-link.test.ts and without-redis.test.ts cover those paths.
const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true, kv: new MemoryKeyValueStore() })
  await h.services.settings.update({ takeFailuresGlobal: 1_000_000 })
})
afterAll(async () => {
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })
const wrongCode = (i: number) => String(100_000_000_000 + i)

async function newShare() {
  const { file } = await uploadFile(h, { name: 'g.txt', data: Buffer.from('g') })
  const { code } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 100 })).body
  return { code: code as string, file }
}

describe('guessing limiter, per address', () => {
  it('when one address fails 10 takes, then the 11th request gets 429 with Retry-After, even with a right code', async () => {
    const { code, file } = await newShare()
    for (let i = 0; i < 10; i++) {
      const res = await api(h, 'POST', '/api/take', { code: wrongCode(i) }, from('192.0.2.10'))
      expect(res.status).toBe(404)
    }
    const blocked = await api(h, 'POST', '/api/take', { code }, from('192.0.2.10'))
    expect(blocked.status).toBe(429)
    expect(blocked.body.error.code).toBe('rate_limit_exceeded')
    expect(blocked.body.error.details.reason).toBe('address')
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(500)
    const dl = await fetch(`${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`, {
      headers: from('192.0.2.10'),
    })
    expect(dl.status).toBe(429)
    // Another address is not affected.
    expect((await api(h, 'POST', '/api/take', { code }, from('192.0.2.11'))).status).toBe(200)
  })

  it('when an address takes a right code many times, then it spends none of its failure budget', async () => {
    const { code } = await newShare()
    for (let i = 0; i < 30; i++)
      expect((await api(h, 'POST', '/api/take', { code }, from('192.0.2.20'))).status).toBe(200)
    const wrong = []
    for (let i = 0; i < 11; i++)
      wrong.push((await api(h, 'POST', '/api/take', { code: wrongCode(i) }, from('192.0.2.20'))).status)
    expect(wrong).toEqual([...Array(10).fill(404), 429])
  })

  it('when 200 wrong codes from one address arrive 25 at a time, then exactly 10 are checked and the rest get 429', async () => {
    const statuses = await flood(
      200,
      (i) =>
        api(h, 'POST', '/api/take', { code: wrongCode(1000 + i) }, from('192.0.2.30')).then((r) => r.status),
      25,
    )
    expect(statuses.filter((s) => s === 404)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(190)
  })

  it('when wrong codes come from many addresses of one IPv6 /64, then they share one budget; another /64 has its own', async () => {
    const { code } = await newShare()
    for (let i = 1; i <= 10; i++) {
      const res = await api(
        h,
        'POST',
        '/api/take',
        { code: wrongCode(i) },
        from(`2001:db8:aa:bb::${i.toString(16)}`),
      )
      expect(res.status).toBe(404)
    }
    const sameNet = await api(h, 'POST', '/api/take', { code }, from('2001:db8:aa:bb:ffff:ffff:ffff:ffff'))
    expect(sameNet.status).toBe(429)
    const otherNet = await api(h, 'POST', '/api/take', { code }, from('2001:db8:aa:bc::1'))
    expect(otherNet.status).toBe(200)
  })

  it('when downloads name a wrong code or a path not in the share, then they spend the same budget as takes', async () => {
    const { code, file } = await newShare()
    const statuses = []
    for (let i = 0; i < 5; i++)
      statuses.push(
        (await fetch(`${h.url}/api/download?code=${wrongCode(i)}&path=x`, { headers: from('192.0.2.40') }))
          .status,
      )
    for (let i = 0; i < 5; i++)
      statuses.push(
        (await fetch(`${h.url}/api/download?code=${code}&path=nope${i}`, { headers: from('192.0.2.40') }))
          .status,
      )
    expect(statuses).toEqual(Array(10).fill(404))
    const right = await fetch(
      `${h.url}/api/download?code=${code}&path=${encodeURIComponent(file.pathname)}`,
      {
        headers: from('192.0.2.40'),
      },
    )
    expect(right.status).toBe(429)
  })
})
