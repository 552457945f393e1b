import { execFile } from 'node:child_process'
import path from 'node:path'
import { promisify } from 'node:util'
import { quoteIdent } from '@quartet/core/db'
import { RedisKeyValueStore } from '@quartet/core/kv'
import { type OwnRedis, request, silentLogger, startOwnRedis, uniqueName } from '@quartet/core/testing'
import { buildDnsManager } from '../../src/app.ts'
import { createDb, type Db } from '../../src/store/db.ts'
import { addZone, createAccount, type TestAccount, testConfig, unique, useDeps } from '../helpers.ts'

/**
 * The principal cache (store/principal-cache.ts) with two replicas sharing one Redis: each keeps
 * credentials and accounts per process, and a change made through one replica, or the operator
 * CLI, takes effect on the very next request on the other (issue 17, item 2).
 */
const deps = useDeps()
const run = promisify(execFile)
// Several tests run the operator CLI (through tsx), which takes seconds on a busy machine.
jest.setTimeout(90_000)
const appDir = path.join(__dirname, '../..')
const tsx = path.join(appDir, '../../node_modules/.bin/tsx')

let redis: OwnRedis
let prefix: string
const kvs: RedisKeyValueStore[] = []
const dbs: Db[] = []

beforeAll(async () => {
  redis = await startOwnRedis()
  prefix = `${uniqueName('principals')}:`
})
afterAll(async () => {
  await Promise.all(kvs.map((kv) => kv.close()))
  await Promise.all(dbs.map((db) => db.$disconnect()))
  await redis.stop()
})

/** One replica: its own database pool and Redis connection, the cache on (entries live up to 10 min). */
function replica() {
  // A generous command timeout: a loaded machine's slow Redis answer would otherwise skip the
  // cache for that request (as it must in production), which is not what these tests are about.
  const kv = RedisKeyValueStore.connect(redis.url, prefix, 5_000)
  const db = createDb({ url: deps.database.url, schema: deps.database.schema, poolSize: 4 })
  kvs.push(kv)
  dbs.push(db)
  return buildDnsManager({
    config: testConfig(deps, { PRINCIPAL_CACHE_MAX_AGE_MS: '600000', RATE_LIMIT_PER_MINUTE: '100000' }),
    logger: silentLogger(),
    db,
    kv,
    cachePrincipals: true,
  }).app
}

/** The operator CLI, as an operator runs it, on the same database and Redis. */
async function cli(...args: string[]): Promise<Record<string, unknown>> {
  const env = {
    ...process.env,
    DATABASE_URL: deps.database.url,
    DATABASE_SCHEMA: deps.database.schema,
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    LOG_LEVEL: 'silent',
  }
  const { stdout } = await run(tsx, ['src/cli.ts', ...args], { cwd: appDir, env })
  return JSON.parse(stdout) as Record<string, unknown>
}

type App = ReturnType<typeof replica>
const quota = (app: App, a: Pick<TestAccount, 'headers'>, ip = '127.0.0.1') =>
  request(app).get('/rest/quota').set(a.headers).set('X-Forwarded-For', ip)

/** Enough requests for the replica to cache the principal (the first reads make its token). */
async function warm(app: App, a: Pick<TestAccount, 'headers'>, ip = '127.0.0.1') {
  for (let i = 0; i < 3; i++) await quota(app, a, ip).expect(200)
}

const sql = (statement: string, ...values: unknown[]) =>
  deps.db.$executeRawUnsafe(statement.replaceAll('$schema', quoteIdent(deps.database.schema)), ...values)

describe('principal cache across two replicas sharing one Redis', () => {
  let a: App
  let b: App
  beforeAll(() => {
    a = replica()
    b = replica()
  })

  it('when a principal is cached, then a change made around the service (SQL) is not seen, and a change through it is seen on the next request', async () => {
    const acct = await createAccount(deps, { quota: 5 })
    await warm(b, acct)

    // Proves the cache serves: the database says 9, the replica's copy still 5.
    await sql(`UPDATE $schema."account" SET quota_total = 9 WHERE id = $1::uuid`, acct.accountId)
    expect((await quota(b, acct).expect(200)).body.quota.total).toBe(5)

    // The same kind of change through the operator CLI replaces the account's token.
    await cli('accounts:update', '--account', acct.accountId, '--quota', '7')
    expect((await quota(b, acct).expect(200)).body.quota.total).toBe(7)
  })

  it('when a secret is regenerated on one replica, then the other refuses the old secret on its next request and takes the new one', async () => {
    const acct = await createAccount(deps)
    await warm(a, acct)
    await warm(b, acct)
    const keys = await request(a).get('/rest/keys').set(acct.headers).expect(200)
    const id = keys.body.keys[0].id as string

    const regenerated = await request(a).post(`/rest/keys/${id}/regenerate`).set(acct.headers).expect(200)

    await quota(b, acct).expect(401)
    await quota(a, acct).expect(401)
    const fresh = { headers: { 'X-API-Key': acct.apiKey, 'X-API-Secret': regenerated.body.key.api_secret } }
    await quota(b, fresh).expect(200)
  })

  it('when a credential is deleted on one replica, then the other refuses it on its next request', async () => {
    const acct = await createAccount(deps)
    const second = await request(a).post('/rest/keys').set(acct.headers).send({}).expect(201)
    const other = {
      headers: { 'X-API-Key': second.body.key.api_key, 'X-API-Secret': second.body.key.api_secret },
    }
    await warm(b, other)

    await request(a).delete(`/rest/keys/${second.body.key.id}`).set(acct.headers).expect(200)

    await quota(b, other).expect(401)
    await quota(b, acct).expect(200)
  })

  it('when API access is switched off (CLI), then both replicas answer 403 on their next request, and 200 once it is back on', async () => {
    const acct = await createAccount(deps)
    await warm(a, acct)
    await warm(b, acct)

    await cli('accounts:update', '--account', acct.accountId, '--disable-api')

    expect((await quota(a, acct).expect(403)).body.error.code).toBe('api_access_disabled')
    expect((await quota(b, acct).expect(403)).body.error.code).toBe('api_access_disabled')
    await cli('accounts:update', '--account', acct.accountId, '--enable-api')
    await quota(b, acct).expect(200)
  })

  it('when the IP allow list changes (CLI), then the next request from an address no longer on it is 403 on every replica', async () => {
    const acct = await createAccount(deps, { allowList: ['198.51.100.0/24'] })
    await warm(b, acct, '198.51.100.7')
    await quota(b, acct, '203.0.113.9').expect(403)

    await cli('accounts:update', '--account', acct.accountId, '--allow-ip', '203.0.113.0/24')

    expect((await quota(b, acct, '198.51.100.7').expect(403)).body.error.code).toBe('auth_ip_not_allowed')
    await quota(a, acct, '203.0.113.9').expect(200)
  })

  it('when the balance changes (a paid subdomain on one replica, a credit by CLI), then the other replica shows it on its next request', async () => {
    const zone = `${unique('paid')}.test`
    await addZone(deps, zone, 300, 1)
    const acct = await createAccount(deps, { balanceCents: 1000, quota: 5 })
    await warm(b, acct)
    expect((await quota(b, acct).expect(200)).body.balance_cents).toBe(1000)

    await request(a)
      .post('/rest/subdomains')
      .set(acct.headers)
      .send({ subdomain: 'shop', rootdomain: zone })
      .expect(201)
    const after = (await quota(b, acct).expect(200)).body
    expect(after.balance_cents).toBe(700)
    expect(after.quota).toEqual({ used: 1, total: 5, available: 4 })

    await cli('balance:credit', '--account', acct.accountId, '--cents', '50')
    expect((await quota(b, acct).expect(200)).body.balance_cents).toBe(750)
  })

  it('when a subdomain is deleted, then its update-only credentials (gone with it) are refused by the other replica at once', async () => {
    const zone = `${unique('dyn')}.test`
    await addZone(deps, zone)
    const acct = await createAccount(deps)
    const made = await request(a)
      .post('/rest/subdomains')
      .set(acct.headers)
      .send({ subdomain: 'home', rootdomain: zone })
      .expect(201)
    const id = made.body.subdomain.id as number
    const scoped = (
      await request(a)
        .post('/rest/keys')
        .set(acct.headers)
        .send({ scope: 'dyndns', subdomain_id: id })
        .expect(201)
    ).body.key
    const auth = `Basic ${Buffer.from(`${scoped.api_key}:${scoped.api_secret}`).toString('base64')}`
    const update = () =>
      request(b)
        .get('/nic/update')
        .query({ hostname: `home.${zone}`, myip: '1.2.8.5' })
        .set('Authorization', auth)
    for (let i = 0; i < 3; i++) expect((await update()).status).toBe(200)

    await request(a).delete(`/rest/subdomains/${id}`).set(acct.headers).expect(200)

    const refused = await update()
    expect([refused.status, refused.text]).toEqual([401, 'badauth\n'])
  })

  it('when many requests arrive at once for a cached principal, then each is answered from it and a change still lands on the next one', async () => {
    const acct = await createAccount(deps, { quota: 3 })
    await warm(b, acct)
    const burst = await Promise.all(Array.from({ length: 40 }, () => quota(b, acct)))
    expect(burst.every((r) => r.status === 200 && r.body.quota.total === 3)).toBe(true)

    await cli('accounts:update', '--account', acct.accountId, '--quota', '4')
    const next = await Promise.all(Array.from({ length: 20 }, () => quota(b, acct)))
    expect(next.map((r) => r.body.quota?.total)).toEqual(Array(20).fill(4))
  })
})
