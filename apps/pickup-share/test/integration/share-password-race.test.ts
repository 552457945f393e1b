import { type KeyValueStore, MemoryKeyValueStore } from '@quartet/core/kv'
import { Registry } from 'prom-client'
import { registerPasswordMetrics } from '../../src/http/metrics.ts'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// Issue 47 item 1: wrong share passwords are bounded per address and per share with the same
// exactness as pickup-code guessing — parallel guesses, split over two service instances on one
// Postgres and Redis (two replicas), cannot exceed either budget — and they never spend the code
// guessing budget or a download.
const deps = testDeps()
const PASSWORD = 'open sesame 47'
const PER_ADDRESS = 6
const PER_SHARE = 9
const CODE_BUDGET = 3
let h: Harness
let other: Harness
/** Each instance's password metrics (as each replica's /metrics would show them). */
const registries: Registry[] = []

/** A counter summed over both instances. */
async function metric(name: string, labels: Record<string, string> = {}): Promise<number> {
  let sum = 0
  for (const registry of registries) {
    const found = (await registry.getMetricsAsJSON()).find((m) => m.name === name)
    const value = found?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    sum += Number(value?.value ?? 0)
  }
  return sum
}

beforeAll(async () => {
  // The checks in flight get time to end before the ones waiting behind them are answered (a
  // loaded machine's scrypt is slow): what is measured is the budget, not the wait.
  // And Redis gets time enough that a loaded machine's slow answer is not taken for an outage
  // (each process would then count alone: exact per process, not across the two).
  const patient = {
    strictGuessLimits: true,
    guessWaitMs: 10_000,
    kvDeadline: { timeoutMs: 3_000, pauseMs: 500 },
  }
  h = await startHarness(deps, patient)
  other = await startHarness(deps, { ...patient, config: { BLOB_DIR: h.config.BLOB_DIR } })
  for (const instance of [h, other]) {
    const registry = new Registry()
    registerPasswordMetrics(registry, instance.services.passwords)
    registries.push(registry)
  }
  // The code budget is wide during the bursts (their right codes are checked in parallel on two
  // instances, and a code check waits only for those in flight in its own process); the first
  // test narrows it afterwards to show that the bursts spent none of it.
  await h.services.settings.update({
    takeFailuresPerIp: 1000,
    takeFailuresGlobal: 1_000_000,
    passwordFailuresPerIp: PER_ADDRESS,
    passwordFailuresPerShare: PER_SHARE,
  })
})
afterAll(async () => {
  await other.close()
  await h.close()
})

const from = (ip: string) => ({ 'x-forwarded-for': ip })

async function protectedShare() {
  const { file } = await uploadFile(h, { name: 'race.txt', data: Buffer.from('race') })
  const res = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 3, password: PASSWORD })
  expect(res.status).toBe(200)
  return { code: res.body.code as string, file }
}

/** `n` wrong passwords at once, alternating between the two instances and between take and download. */
async function burst(code: string, path: string, addressOf: (i: number) => string, n: number) {
  const answers = await Promise.all(
    Array.from({ length: n }, (_, i) => {
      const target = i % 2 ? other : h
      const headers = { ...from(addressOf(i)), 'x-share-password': `wrong-${i}` }
      if (i % 4 < 2) return api(target, 'POST', '/api/take', { code }, headers)
      return api(target, 'GET', `/api/download?${new URLSearchParams({ code, path })}`, undefined, headers)
    }),
  )
  const statuses = answers.map((a) => a.status)
  return {
    wrong: statuses.filter((s) => s === 403).length,
    refused: statuses.filter((s) => s === 429).length,
    other: statuses.filter((s) => s !== 403 && s !== 429),
    reasons: [...new Set(answers.filter((a) => a.status === 429).map((a) => a.body.error.details.reason))],
  }
}

describe('password guessing under parallel requests on two instances', () => {
  it(`when 30 wrong passwords from one address arrive at once, then exactly ${PER_ADDRESS} are compared and the code budget is untouched`, async () => {
    const { code, file } = await protectedShare()
    const ip = '198.51.100.47'
    expect(await burst(code, file.pathname, () => ip, 30)).toEqual({
      wrong: PER_ADDRESS,
      refused: 30 - PER_ADDRESS,
      other: [],
      reasons: ['password_address'],
    })
    expect(await metric('pickup_share_password_failures_total')).toBe(PER_ADDRESS)
    expect(await metric('pickup_share_password_refused_total', { reason: 'password_address' })).toBe(
      30 - PER_ADDRESS,
    )
    // The address's password budget is spent: the right password waits too (429), with Retry-After.
    const right = await api(h, 'POST', '/api/take', { code, password: PASSWORD }, from(ip))
    expect(right.status).toBe(429)
    expect(right.body.error.details.reason).toBe('password_address')
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0)
    // Not one of those was a code guess: with a code budget of 3, three wrong codes still get 404.
    await h.services.settings.update({ takeFailuresPerIp: CODE_BUDGET })
    for (let i = 0; i < CODE_BUDGET; i++)
      expect((await api(other, 'POST', '/api/take', { code: `99999999990${i}` }, from(ip))).status).toBe(404)
    expect((await api(h, 'POST', '/api/take', { code: '999999999909' }, from(ip))).status).toBe(429)
    await h.services.settings.update({ takeFailuresPerIp: 1000 })
    // Another address opens the share, and no download was spent by the burst.
    const elsewhere = await api(
      other,
      'POST',
      '/api/take',
      { code, password: PASSWORD },
      from('198.51.100.48'),
    )
    expect(elsewhere.status).toBe(200)
    expect(elsewhere.body.remaining).toBe(3)
  })

  it(`when 30 wrong passwords from 30 addresses arrive at once, then exactly ${PER_SHARE} are compared for the share`, async () => {
    const { code, file } = await protectedShare()
    const result = await burst(code, file.pathname, (i) => `203.0.113.${100 + i}`, 30)
    expect(result).toEqual({
      wrong: PER_SHARE,
      refused: 30 - PER_SHARE,
      other: [],
      reasons: ['password_share'],
    })
    const refused = await api(
      h,
      'POST',
      '/api/take',
      { code, password: 'still wrong' },
      from('203.0.113.200'),
    )
    expect(refused.status).toBe(429)
    expect(refused.body.error.details.reason).toBe('password_share')
    // Another share is not affected by this share's budget.
    const next = await protectedShare()
    const taken = await api(
      other,
      'POST',
      '/api/take',
      { code: next.code, password: PASSWORD },
      from('203.0.113.201'),
    )
    expect(taken.status).toBe(200)
  })

  it('when the right password comes in parallel from one address to one instance (a download manager), then every check passes', async () => {
    const { code, file } = await protectedShare()
    const ip = '198.51.100.90'
    // More parallel checks than the address's budget: each spends a failure in advance and gives
    // it back, so those behind wait for the ones in flight in this process instead of being refused.
    const statuses = await Promise.all(
      Array.from({ length: PER_ADDRESS * 2 }, () =>
        fetch(`${h.url}/api/download?${new URLSearchParams({ code, path: file.pathname })}`, {
          method: 'HEAD',
          headers: { ...from(ip), 'x-share-password': PASSWORD },
        }).then((r) => r.status),
      ),
    )
    expect(statuses).toEqual(Array.from({ length: PER_ADDRESS * 2 }, () => 200))
  })

  it('when Redis refuses the password counters, then each process counts alone and still exactly', async () => {
    // A kv that is down for the password counters only (the rest of the app keeps working).
    const inner = new MemoryKeyValueStore()
    const down = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop !== 'hitWindow') return Reflect.get(target, prop, receiver)
        return (key: string, ...rest: [number, number]) =>
          key.startsWith('pw:')
            ? Promise.reject(new Error('kv not connected (reconnecting)'))
            : target.hitWindow(key, ...rest)
      },
    }) as unknown as KeyValueStore
    const alone = await startHarness(deps, {
      strictGuessLimits: true,
      guessWaitMs: 10_000,
      kv: down,
      config: { BLOB_DIR: h.config.BLOB_DIR },
    })
    try {
      const { code } = await protectedShare()
      const target = { url: alone.url }
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          api(target, 'POST', '/api/take', { code, password: `wrong-${i}` }, from('198.51.100.77')).then(
            (r) => r.status,
          ),
        ),
      )
      expect(statuses.filter((s) => s === 403)).toHaveLength(PER_ADDRESS)
      expect(statuses.filter((s) => s === 429)).toHaveLength(30 - PER_ADDRESS)
    } finally {
      await alone.close()
    }
  })
})
