import { MemoryKeyValueStore } from '@quartet/core/kv'
import { Registry } from 'prom-client'
import { registerGuessMetrics } from '../../src/http/metrics.ts'
import { api, flood, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// The global failure budget and its throttle (one kv per file: this file's tests share one count).
// Memory kv: exact counts under heavy concurrency are this file's point. With Redis on a loaded
// machine, a limiter call slower than 0.5 s is counted in the process instead (the documented
// fallback), which blurs them; pickup-link.test.ts and without-redis.test.ts cover those paths.
const deps = testDeps()
let h: Harness
let registry: Registry
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true, kv: new MemoryKeyValueStore() })
  registry = new Registry()
  registerGuessMetrics(registry, h.services.guard)
})
afterAll(async () => {
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })

async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name)
  const value = found?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
  return Number(value?.value ?? NaN)
}

describe('guessing limiter, everyone together', () => {
  it('when 1,000 wrong codes arrive from 100 addresses at once, then at most budget + throttle are checked, the alert is raised, and nobody is locked out', async () => {
    await h.services.settings.update({
      takeFailuresPerIp: 10,
      takeFailuresGlobal: 100,
      guessThrottlePerMinute: 20,
      takeFailureWindowSeconds: 600,
    })
    const { file } = await uploadFile(h, { name: 'kept.txt', data: Buffer.from('kept') })
    const { code } = (await api(h, 'POST', '/api/share', { files: [file] })).body

    const answers = await flood(1000, (i) =>
      api(h, 'POST', '/api/take', { code: String(200_000_000_000 + i) }, from(`198.51.100.${(i % 100) + 1}`)),
    )
    const count = (status: number) => answers.filter((r) => r.status === status).length
    // 100 within the global budget, then 20 slots of the throttle; every other guess unchecked.
    expect(count(404)).toBe(120)
    expect(count(429)).toBe(880)
    expect(answers.find((r) => r.status === 429)!.body.error.details.reason).toBe('throttle')
    expect(await metric('pickup_share_guess_failures_total')).toBe(120)
    expect(await metric('pickup_share_guess_throttled_total')).toBe(20)
    expect(await metric('pickup_share_guess_refused_total', { reason: 'throttle' })).toBe(880)
    expect(await metric('pickup_share_guess_throttle_active')).toBe(1)

    // The receiver with the right code is throttled like everyone, for at most a minute…
    const waiting = await api(h, 'POST', '/api/take', { code }, from('203.0.113.7'))
    expect(waiting.status).toBe(429)
    expect(waiting.body.error.details.reason).toBe('throttle')
    const retryAfter = Number(waiting.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(60)

    // …and goes through as soon as the throttle has a slot: the flood locked nobody out.
    await h.services.settings.update({ guessThrottlePerMinute: 10_000 })
    const taken = await api(h, 'POST', '/api/take', { code }, from('203.0.113.7'))
    expect(taken.status).toBe(200)
    expect(taken.body.manifest.files[0].name).toBe('kept.txt')
    // A flooding address was refused unchecked while the throttle was full, so it kept its budget.
    const flooder = await api(h, 'POST', '/api/take', { code }, from('198.51.100.1'))
    expect(flooder.status).toBe(200)
    // A wrong code past the global budget is slowed, not refused: it is checked through the throttle.
    const wrong = await api(h, 'POST', '/api/take', { code: '299999999999' }, from('203.0.113.8'))
    expect(wrong.status).toBe(404)
    expect(await metric('pickup_share_guess_throttled_total')).toBe(23)
  })
})
