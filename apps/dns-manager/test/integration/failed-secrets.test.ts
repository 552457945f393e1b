import { RedisKeyValueStore } from '@quartet/core/kv'
import { request, silentLogger, startOwnRedis, uniqueName } from '@quartet/core/testing'
import { buildDnsManager } from '../../src/app.ts'
import { createDb, type Db } from '../../src/store/db.ts'
import { buildApp, createAccount, type TestAccount, testConfig, useDeps } from '../helpers.ts'

const deps = useDeps()

/** A fresh client address for each use, so tests share no budget (kv has its own prefix per test file). */
let next = 0
const freshV4 = () => {
  next++
  return `198.51.${next >> 8}.${next & 255}`
}
const freshV6Net = () => `2001:db8:${(++next).toString(16)}:0`

/**
 * The bursts below send up to 50 lookups at once: they count failures, not the pool's deadlines,
 * so their app gets a pool of its own that waits its turn (the default waits 1 s, then 503).
 */
let burstDb: Db
beforeAll(() => {
  burstDb = createDb({
    url: deps.database.url,
    schema: deps.database.schema,
    poolSize: 8,
    deadlines: { connectTimeoutMs: 30_000, queryTimeoutMs: 30_000 },
  })
})
afterAll(() => burstDb.$disconnect())
const burstApp = (env: Record<string, string> = {}) =>
  buildDnsManager({ config: testConfig(deps, env), logger: silentLogger(), db: burstDb, kv: deps.kv }).app

const wrong = (a: TestAccount) => ({ 'X-API-Key': a.apiKey, 'X-API-Secret': 'f'.repeat(64) })
const verify = (app: Parameters<typeof request>[0], headers: Record<string, string>, ip: string) =>
  request(app).post('/rest/auth/verify').set(headers).set('X-Forwarded-For', ip)

const statuses = (responses: Array<{ status: number }>) => {
  const count: Record<number, number> = {}
  for (const r of responses) count[r.status] = (count[r.status] ?? 0) + 1
  return count
}

describe('failed secrets are limited per address and per key', () => {
  it('when 50 wrong secrets arrive at once from one address, then exactly 20 are checked (401), the rest are 429 with reset_at, and the owner elsewhere still gets in', async () => {
    const app = burstApp()
    const a = await createAccount(deps)
    const attacker = freshV4()

    const answers = await Promise.all(Array.from({ length: 50 }, () => verify(app, wrong(a), attacker)))

    expect(statuses(answers)).toEqual({ 401: 20, 429: 30 })
    const refused = answers.find((r) => r.status === 429)!
    expect(refused.body).toMatchObject({
      success: false,
      error: { code: 'rate_limit_exceeded', details: { reset_at: expect.any(String) } },
    })
    const wait = Number(refused.headers['retry-after'])
    expect(wait).toBeGreaterThan(500)
    expect(wait).toBeLessThanOrEqual(600)
    expect(Date.parse(refused.body.error.details.reset_at)).toBeGreaterThan(Date.now() + 500_000)
    // The address is refused the right secret too (before the database is asked), so the budget bounds guessing.
    await verify(app, a.headers, attacker).expect(429)
    // The owner, from another address, is not locked out.
    await verify(app, a.headers, freshV4()).expect(200)
  })

  it('when requests carry no credentials at all, then they spend nothing of the address budget', async () => {
    const { app } = buildApp(deps, { env: { AUTH_FAILURES_PER_ADDRESS: '3' } })
    const a = await createAccount(deps)
    const ip = freshV4()
    for (let i = 0; i < 5; i++) await verify(app, {}, ip).expect(401)
    await verify(app, a.headers, ip).expect(200)
  })

  it('when addresses of one IPv6 /64 guess, then they share one budget; another /64 has its own', async () => {
    const { app } = buildApp(deps, { env: { AUTH_FAILURES_PER_ADDRESS: '5' } })
    const a = await createAccount(deps)
    const net = freshV6Net()
    for (let i = 1; i <= 5; i++) await verify(app, wrong(a), `${net}::${i}`).expect(401)
    await verify(app, wrong(a), `${net}::ffff:1`).expect(429)
    await verify(app, wrong(a), `${freshV6Net()}::1`).expect(401)
  })

  it('when 45 addresses guess one key at once, then exactly 30 guesses are checked; the owner from a clean address gets in, an address that failed does not', async () => {
    const app = burstApp({ AUTH_FAILURES_PER_KEY: '30' })
    const a = await createAccount(deps)
    const attackers = Array.from({ length: 45 }, () => freshV4())

    const answers = await Promise.all(attackers.map((ip) => verify(app, wrong(a), ip)))

    expect(statuses(answers)).toEqual({ 401: 30, 429: 15 })
    // An address with no failure of its own still has its secret checked: the owner gets in.
    await verify(app, a.headers, freshV4()).expect(200)
    // So does a fresh attacker, for exactly one wrong guess, answered 429 since the key is over its budget.
    const fresh = freshV4()
    await verify(app, wrong(a), fresh).expect(429)
    // An address that has failed is refused while the key is over its budget, even with the right secret.
    await verify(app, a.headers, fresh).expect(429)
    await verify(app, a.headers, attackers[0]!).expect(429)
    // Other keys are untouched.
    const b = await createAccount(deps)
    await verify(app, b.headers, attackers[0]!).expect(200)
  })

  it('when an address is past its budget, then the refusal is 429 rate_limit_exceeded with reset_at and Retry-After in REST, JSON-RPC and GraphQL', async () => {
    const { app } = buildApp(deps, { env: { AUTH_FAILURES_PER_ADDRESS: '2' } })
    const a = await createAccount(deps)
    const ip = freshV4()
    await verify(app, wrong(a), ip).expect(401)
    await verify(app, wrong(a), ip).expect(401)

    const rest = await request(app).get('/rest/quota').set(a.headers).set('X-Forwarded-For', ip).expect(429)
    expect(rest.body.error).toMatchObject({
      code: 'rate_limit_exceeded',
      details: { reset_at: expect.any(String) },
    })
    expect(Number(rest.headers['retry-after'])).toBeGreaterThan(0)

    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .set('X-Forwarded-For', ip)
      .send({ jsonrpc: '2.0', method: 'quota.get', id: 1 })
      .expect(200)
    expect(rpc.body).toMatchObject({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32011,
        data: { error_code: 'rate_limit_exceeded', details: { reset_at: expect.any(String) } },
      },
    })
    expect(Number(rpc.headers['retry-after'])).toBeGreaterThan(0)

    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .set('X-Forwarded-For', ip)
      .send({ query: '{ quota { balance_cents } }' })
      .expect(429)
    expect(gql.body.errors[0].extensions).toMatchObject({
      code: 'rate_limit_exceeded',
      details: { reset_at: expect.any(String) },
    })
    expect(Number(gql.headers['retry-after'])).toBeGreaterThan(0)
  })

  it('when Redis is frozen (SIGSTOP), then wrong secrets are still limited (in this process, exactly) and the owner still gets in', async () => {
    const redis = await startOwnRedis()
    const kv = RedisKeyValueStore.connect(redis.url, `${uniqueName('frozen')}:`)
    try {
      const { app } = buildDnsManager({
        config: testConfig(deps, { AUTH_FAILURES_PER_ADDRESS: '4' }),
        logger: silentLogger(),
        db: burstDb,
        kv,
      })
      const a = await createAccount(deps)
      await verify(app, a.headers, freshV4()).expect(200)
      redis.freeze()
      const ip = freshV4()

      const started = Date.now()
      const answers = await Promise.all(Array.from({ length: 10 }, () => verify(app, wrong(a), ip)))

      expect(statuses(answers)).toEqual({ 401: 4, 429: 6 })
      expect(Date.now() - started).toBeLessThan(3000)
      await verify(app, a.headers, freshV4()).expect(200)
    } finally {
      redis.thaw()
      await kv.close()
      await redis.stop()
    }
  })
})
