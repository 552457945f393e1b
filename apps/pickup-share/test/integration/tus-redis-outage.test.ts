import { setTimeout as sleep } from 'node:timers/promises'
import { api } from '../support/harness.ts'
import { describeOwnRedis, timed, useOwnRedisHarness } from '../support/own-redis.ts'

// The locks of resumable uploads live in Redis; a Redis server of this test's own (never
// the shared one) is frozen with SIGSTOP, then killed, while an upload is half done.
jest.setTimeout(60_000)

const own = useOwnRedisHarness('tus-outage-test:')

const TUS = { 'tus-resumable': '1.0.0' }

describeOwnRedis('resumable uploads with their Redis frozen, then killed', () => {
  it('when Redis is frozen or gone, then tus requests answer 503 with Retry-After within 2 s, and the upload resumes once it is back', async () => {
    const { h, redis } = own
    const size = 200_000
    const data = Buffer.alloc(size, 7)
    const grant = (await api(h, 'POST', '/api/upload', { store: 'blob', name: 'outage.bin', size })).body
    const created = await fetch(`${h.url}${grant.tus.endpoint}`, {
      method: 'POST',
      headers: { ...TUS, ...grant.tus.headers, 'upload-length': String(size) },
    })
    expect(created.status).toBe(201)
    const url = new URL(created.headers.get('location')!, h.url)
    const patch = (offset: number, body: Buffer) =>
      fetch(url, {
        method: 'PATCH',
        headers: {
          ...TUS,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
        },
        body: new Uint8Array(body),
      })
    expect((await patch(0, data.subarray(0, size / 2))).status).toBe(204)

    redis.freeze()
    try {
      for (const call of [
        () => fetch(url, { method: 'HEAD', headers: TUS }),
        () => patch(size / 2, data.subarray(size / 2)),
      ]) {
        const [res, ms] = await timed(call)
        expect(res.status).toBe(503)
        expect(res.headers.get('retry-after')).toBe('5')
        expect(ms).toBeLessThan(2000)
        await res.arrayBuffer()
      }
    } finally {
      redis.thaw()
    }

    // Back: the offset is where it was, and the rest completes the file.
    await sleep(500)
    const head = await fetch(url, { method: 'HEAD', headers: TUS })
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe(String(size / 2))
    expect((await patch(size / 2, data.subarray(size / 2))).status).toBe(204)
    const shared = await api(h, 'POST', '/api/share', {
      files: [
        {
          name: 'outage.bin',
          size,
          type: 'application/octet-stream',
          pathname: grant.pathname,
          proof: grant.proof,
          store: 'blob',
        },
      ],
    })
    expect(shared.status).toBe(200)

    await redis.stop()
    await sleep(100)
    const [gone, ms] = await timed(() => fetch(url, { method: 'HEAD', headers: TUS }))
    expect(gone.status).toBe(503)
    expect(gone.headers.get('retry-after')).toBe('5')
    expect(ms).toBeLessThan(2000)
  })
})
