import { createTestKv } from '@quartet/core/testing'
import type { KeyValueStore } from '@quartet/core/kv'
import { MirrorSelector } from '../../src/drivers/mirrors.ts'
import { type GitServer, type MirrorServer, startGitServer, startMirror } from '../support/git-server.ts'

let git: GitServer
let kv: KeyValueStore
let m5: MirrorServer
let m50: MirrorServer
let m500: MirrorServer
let broken: MirrorServer
const sample = { owner: 'acme', repo: 'drop', sha: 'a'.repeat(40), path: 'x/probe.bin' }

beforeAll(async () => {
  git = await startGitServer({ username: 'u', token: 't' })
  kv = createTestKv()
  m500 = await startMirror(git.root, 500)
  broken = await startMirror(git.root, 5, true)
  m50 = await startMirror(git.root, 50)
  m5 = await startMirror(git.root, 5)
})
afterAll(async () => {
  for (const m of [m5, m50, m500, broken]) await m.close()
  await git.close()
  await kv.close()
})

const selector = (ttlMs: number) =>
  new MirrorSelector({ templates: [m500, broken, m50, m5].map((m) => m.template), kv, ttlMs })
const heads = (m: MirrorServer) => m.hits.filter((h) => h.method === 'HEAD').length

describe('mirror selection (3 local mirrors with 5/50/500 ms latency and one failing)', () => {
  it('when mirrors are probed, then the fastest comes first, the failing one is left out, and 3 rounds ran', async () => {
    const ranking = await selector(60_000).rank('scope-a', sample)
    expect(ranking.order).toEqual([3, 2, 0])
    expect(ranking.failed).toEqual([1])
    expect(ranking.latencyMs['3']).toBeLessThan(ranking.latencyMs['2']!)
    expect(ranking.latencyMs['0']).toBeGreaterThanOrEqual(450)
    for (const m of [m5, m50, m500, broken]) expect(heads(m)).toBe(3)
  })

  it('when a ranking is cached, then no mirror is probed again until it expires, and the re-probe sees new latencies', async () => {
    const s = selector(800)
    const first = await s.rank('scope-b', sample)
    expect(first.order[0]).toBe(3)
    const probes = heads(m5)
    const again = await s.rank('scope-b', sample)
    expect(again).toEqual(first)
    expect(heads(m5)).toBe(probes)
    // The 5 ms mirror becomes slow and the broken one recovers; after the TTL the ranking follows.
    m5.delayMs = 300
    broken.failing = false
    await new Promise((r) => setTimeout(r, 900))
    const later = await s.rank('scope-b', sample)
    expect(heads(m5)).toBe(probes + 3)
    expect(later.order[0]).toBe(1)
    expect(later.order).toEqual([1, 2, 3, 0])
    expect(later.failed).toEqual([])
    m5.delayMs = 5
    broken.failing = true
  })

  it('when many downloads need a ranking at once, then one probe serves them all', async () => {
    const s = selector(60_000)
    const before = heads(m50)
    const rankings = await Promise.all(Array.from({ length: 5 }, () => s.rank('scope-c', sample)))
    expect(new Set(rankings.map((r) => JSON.stringify(r))).size).toBe(1)
    expect(heads(m50)).toBe(before + 3)
  })

  it('when a path or owner tries to leave the template host, then the URL stays on the configured host', () => {
    const s = selector(1000)
    for (const evil of [
      { ...sample, path: '../../@evil.example/x' },
      { ...sample, owner: '@evil.example' },
      { ...sample, repo: '//evil.example', path: 'http://evil.example/x' },
    ]) {
      const url = new URL(s.url(0, evil))
      expect(url.origin).toBe(m500.url)
    }
  })
})
