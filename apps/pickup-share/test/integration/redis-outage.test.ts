import { setTimeout as sleep } from 'node:timers/promises'
import { adminLogin, api, uploadFile } from '../support/harness.ts'
import { describeOwnRedis, timed, useOwnRedisHarness } from '../support/own-redis.ts'

// A fault is tested with a real process. A Redis server of this test's own (never the shared
// one) is frozen with SIGSTOP, then killed, while pickup-share uses it.
jest.setTimeout(60_000)

const own = useOwnRedisHarness('outage-test:')

describeOwnRedis('pickup-share with its Redis frozen, then killed', () => {
  it('when Redis is frozen and then killed, then take and download answer within 2 s, admin answers 503, and all recover when it is back', async () => {
    const { h, redis } = own
    const data = Buffer.from('survives an outage')
    const { file } = await uploadFile(h, { name: 'outage.txt', data })
    const { code, token } = (await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 4 })).body
    const session = await adminLogin(h)
    // Another receiver each (issue 42: one receiver's downloads within the window are one).
    let receivers = 0
    const dl = (q: Record<string, string>) =>
      fetch(`${h.url}/api/download?${new URLSearchParams({ ...q, path: file.pathname }).toString()}`, {
        headers: { 'x-forwarded-for': `10.44.0.${++receivers}` },
      })

    redis.freeze()
    try {
      const calls: Array<() => Promise<{ status: number }>> = [
        () => api(h, 'POST', '/api/take', { code }),
        () => api(h, 'POST', '/api/take', { token }),
        async () => {
          const res = await dl({ code })
          return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
        },
      ]
      for (const call of calls) {
        const [res, ms] = await timed(call)
        expect(res.status).toBe(200)
        expect(ms).toBeLessThan(2000)
      }
      const [admin, ms] = await timed(() => api(h, 'GET', '/api/admin/shares', undefined, session))
      expect(admin.status).toBe(503)
      expect(admin.headers.get('retry-after')).toBe('5')
      expect(ms).toBeLessThan(2000)
    } finally {
      redis.thaw()
    }

    // Back: admin works again (after the kv pause), and the count is exact: 4 - 1 = 3 left.
    await sleep(2100)
    expect((await api(h, 'GET', '/api/admin/shares', undefined, session)).status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(3)

    await redis.stop()
    await sleep(100)
    const [take, takeMs] = await timed(() => api(h, 'POST', '/api/take', { code }))
    expect(take.status).toBe(200)
    expect(takeMs).toBeLessThan(2000)
    const [down, downMs] = await timed(async () => {
      const res = await dl({ token })
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) }
    })
    expect(down.status).toBe(200)
    expect(down.body.equals(data)).toBe(true)
    expect(downMs).toBeLessThan(2000)
    expect((await api(h, 'GET', '/api/admin/shares', undefined, session)).status).toBe(503)
    expect((await api(h, 'POST', '/api/take', { code })).body.remaining).toBe(2)
  })
})
