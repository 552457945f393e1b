import { type Clock, fixedClock } from '@quartet/core/clock'
import { metricsRegistryOf } from '@quartet/core/http'
import type { Express } from 'express'
import { quoteIdent } from '@quartet/core/db'
import { RedisKeyValueStore } from '@quartet/core/kv'
import { type OwnRedis, silentLogger, startOwnRedis, uniqueName } from '@quartet/core/testing'
import { buildDnsManager } from '../../src/app.ts'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { databaseProvider } from '../../src/providers/database.ts'
import { createDb, type Db } from '../../src/store/db.ts'
import { accountVersionKey } from '../../src/store/principal-cache.ts'
import { addZone, createAccount, type TestAccount, testConfig, unique, useDeps } from '../helpers.ts'
import { listen } from '../support/hot-parity.ts'

/**
 * The account views cache (store/view-cache.ts) with two replicas sharing one Redis: the quota,
 * pages of subdomains and pages of records are kept per process under the account's version
 * token, and a write through either replica shows on the other's very next read, in every call
 * style, on the hot path and through express alike; a page whose subdomain expires turns without
 * any write. A third replica, without the cache, answers every read from the database: the cached
 * answers must be its answers, byte for byte.
 */
const deps = useDeps()
jest.setTimeout(60_000)
const DAY = 86_400_000

let redis: OwnRedis
let prefix: string
const kvs: RedisKeyValueStore[] = []
const dbs: Db[] = []
const servers: Array<{ close: () => Promise<void> }> = []

beforeAll(async () => {
  redis = await startOwnRedis()
  prefix = `${uniqueName('views')}:`
})
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
  await Promise.all(kvs.map((kv) => kv.close()))
  await Promise.all(dbs.map((db) => db.$disconnect()))
  await redis.stop()
})

type Replica = (path: string, account: Pick<TestAccount, 'headers'>, init?: RequestInit) => Promise<Response>

/** One replica on a port of its own (so the hot routes answer), its own pool and Redis connection. */
async function replica(
  options: { cache?: boolean; clock?: Clock; provider?: DnsProvider; env?: Record<string, string> } = {},
): Promise<Replica> {
  const kv = RedisKeyValueStore.connect(redis.url, prefix, 5_000)
  const db = createDb({ url: deps.database.url, schema: deps.database.schema, poolSize: 4 })
  kvs.push(kv)
  dbs.push(db)
  const { app } = buildDnsManager({
    config: testConfig(deps, {
      PRINCIPAL_CACHE_MAX_AGE_MS: '600000',
      RATE_LIMIT_PER_MINUTE: '100000',
      ...options.env,
    }),
    logger: silentLogger(),
    db,
    kv,
    cachePrincipals: options.cache ?? true,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.provider ? { provider: options.provider } : {}),
  })
  const server = await listen(app)
  servers.push(server)
  const send: Replica = (path, account, init = {}) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: {
        ...account.headers,
        ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...(init.headers ?? {}),
      },
    })
  appsOf.set(send, app)
  return send
}

const appsOf = new Map<Replica, Express>()

/** Answers a replica gave from the answer memo (dns_manager_memoised_answers_total), by call style. */
async function memoised(app: Replica): Promise<{ rpc: number; graphql: number }> {
  const text = await metricsRegistryOf(appsOf.get(app)!)!.getSingleMetricAsString(
    'dns_manager_memoised_answers_total',
  )
  const count = (style: string) => {
    const found = new RegExp(`style="${style}"[^}]*} (\\d+)`).exec(text)
    if (!found) throw new Error(`no ${style} count in ${text}`)
    return Number(found[1])
  }
  return { rpc: count('rpc'), graphql: count('graphql') }
}

/** A JSON answer, read as the test expects it to be shaped (as supertest's `body`). */
type Json = Record<string, any> // eslint-disable-line @typescript-eslint/no-explicit-any
const json = async (res: Promise<Response>): Promise<Json> => {
  const r = await res
  const body = (await r.json()) as Json
  expect([r.status, r.status < 300 ? 'ok' : body]).toEqual([r.status, 'ok'])
  return body
}
const post = (body: unknown): RequestInit => ({ method: 'POST', body: JSON.stringify(body) })

/** Enough reads for the replica to cache the principal (the first makes its token) and then the views. */
async function warm(app: Replica, a: TestAccount, paths: string[]) {
  for (let i = 0; i < 3; i++) for (const p of paths) await json(app(p, a))
}

/** A key of the replicas' Redis, as the service names it. */
async function redisGet(key: string): Promise<string | null> {
  const kv = RedisKeyValueStore.connect(redis.url, prefix)
  kvs.push(kv)
  return kv.get(key)
}

const sql = (statement: string, ...values: unknown[]) =>
  deps.db.$executeRawUnsafe(statement.replaceAll('$schema', quoteIdent(deps.database.schema)), ...values)

async function accountWithSubdomain(app: Replica) {
  const zone = `${unique('v')}.test`
  await addZone(deps, zone)
  const a = await createAccount(deps, { quota: 10 })
  const made = await json(app('/rest/subdomains', a, post({ subdomain: 'home', rootdomain: zone })))
  return { a, zone, id: made.subdomain.id as number }
}

describe('account views cache across two replicas sharing one Redis', () => {
  let a: Replica
  let b: Replica
  let plain: Replica
  beforeAll(async () => {
    a = await replica()
    b = await replica()
    plain = await replica({ cache: false })
  })

  it('when a page is cached, then a change around the service (SQL) is not seen, and a record written on the other replica is seen on the next read', async () => {
    const { a: acct, id } = await accountWithSubdomain(a)
    const records = `/rest/subdomains/${id}/records`
    await warm(b, acct, [records])

    // Proves the cache serves: the database holds a record the replica's page does not show.
    await sql(
      `INSERT INTO $schema."dns_record" (subdomain_id, name, type, content, ttl, state, created_at, updated_at)
       VALUES ($1, 'sql', 'TXT', 'by hand', 3600, 'active', now(), now())`,
      id,
    )
    expect((await json(b(records, acct))).dns_records).toEqual([])

    const created = await json(a(records, acct, post({ type: 'A', name: 'www', content: '8.8.8.8' })))
    const names = (body: Json) => body.dns_records.map((r: { name: string }) => r.name)
    expect(names(await json(b(records, acct)))).toEqual(['sql', 'www'])
    // Through express as well (a query string), and through JSON-RPC and GraphQL.
    expect(names(await json(b(`${records}?per_page=50`, acct)))).toEqual(['sql', 'www'])

    await json(
      a(`${records}/${created.dns_record.id}`, acct, {
        method: 'PATCH',
        body: JSON.stringify({ content: '8.8.4.4' }),
      }),
    )
    const rpc = await json(
      b(
        '/rpc',
        acct,
        post({ jsonrpc: '2.0', id: 1, method: 'dns_records.list', params: { subdomain_id: id } }),
      ),
    )
    expect(rpc.result.dns_records.find((r: { name: string }) => r.name === 'www').content).toBe('8.8.4.4')

    await json(a(`${records}/${created.dns_record.id}`, acct, { method: 'DELETE' }))
    const gql = await json(
      b('/graphql', acct, post({ query: `{ dnsRecords(subdomain_id: ${id}) { dns_records { name } } }` })),
    )
    expect(gql.data.dnsRecords.dns_records).toEqual([{ name: 'sql' }])
  })

  it('when subdomains are created, renewed and deleted on one replica, then the other replica’s page and quota show each on its next read', async () => {
    const { a: acct, zone, id } = await accountWithSubdomain(a)
    await warm(b, acct, ['/rest/subdomains', '/rest/quota'])
    for (let i = 0; i < 2; i++) await json(b('/rest/auth/verify', acct, { method: 'POST' }))

    const second = await json(a('/rest/subdomains', acct, post({ subdomain: 'shop', rootdomain: zone })))
    const page = await json(b('/rest/subdomains', acct))
    expect(page.subdomains.map((s: { id: number }) => s.id)).toEqual([id, second.subdomain.id])
    expect((await json(b('/rest/quota', acct))).quota.used).toBe(2)
    expect((await json(b('/rest/auth/verify', acct, { method: 'POST' }))).account.quota.used).toBe(2)

    // A renewal moves expires_at (the renewal window is opened by moving the expiry by SQL, then
    // the replica is made to read again by the renewal itself).
    await sql(`UPDATE $schema."subdomain" SET expires_at = now() + interval '10 days' WHERE id = $1`, id)
    const renewed = await json(a(`/rest/subdomains/${id}/renew`, acct, post({})))
    const after = await json(b('/rest/subdomains', acct))
    expect(after.subdomains[0].expires_at).toBe(renewed.subdomain.expires_at)

    await json(b(`/rest/subdomains/${second.subdomain.id}`, acct, { method: 'DELETE' }))
    expect((await json(a('/rest/subdomains', acct))).subdomains.map((s: { id: number }) => s.id)).toEqual([
      id,
    ])
    expect((await json(a('/rest/quota', acct))).quota.used).toBe(1)
  })

  it('when the other replica reads while a write is at the upstream, then the write’s confirmation reaches its next read', async () => {
    const real = databaseProvider()
    let during: (() => Promise<void>) | null = null
    const slow = await replica({
      provider: {
        ...real,
        kind: real.kind,
        applyRRsets: async (zone, rrsets) => {
          const hook = during
          during = null
          if (hook) await hook()
          return real.applyRRsets(zone, rrsets)
        },
      },
    })
    const { a: acct, id } = await accountWithSubdomain(slow)
    const records = `/rest/subdomains/${id}/records`
    await warm(b, acct, [records])
    // The record is pending while the upstream call runs: the page read now (and kept) shows none.
    during = async () => {
      for (let i = 0; i < 2; i++) expect((await json(b(records, acct))).dns_records).toEqual([])
    }
    await json(slow(records, acct, post({ type: 'A', name: 'www', content: '8.8.8.8' })))
    expect(during).toBeNull()
    expect((await json(b(records, acct))).dns_records.map((r: { name: string }) => r.name)).toEqual(['www'])
  })

  it('when reads race a write, then every read after the write was answered shows it', async () => {
    const { a: acct, id } = await accountWithSubdomain(a)
    const records = `/rest/subdomains/${id}/records`
    await warm(b, acct, [records])
    for (let round = 0; round < 5; round++) {
      const reads = Array.from({ length: 20 }, () => json(b(records, acct)))
      await json(a(records, acct, post({ type: 'TXT', name: `r${round}`, content: `round ${round}` })))
      await Promise.all(reads)
      const next = await Promise.all(Array.from({ length: 10 }, () => json(b(records, acct))))
      for (const body of next) expect(body.dns_records).toHaveLength(round + 1)
    }
  })

  it('when cached, then every call style answers byte for byte what a replica without the cache answers', async () => {
    const { a: acct, zone, id } = await accountWithSubdomain(a)
    await json(a('/rest/subdomains', acct, post({ subdomain: 'two', rootdomain: zone })))
    await json(a(`/rest/subdomains/${id}/records`, acct, post({ type: 'A', content: '1.1.1.1' })))
    const requests: Array<[string, RequestInit?]> = [
      ['/rest/quota'],
      ['/rest/auth/verify', { method: 'POST' }],
      ['/rest/subdomains'],
      [`/rest/subdomains/${id}/records`],
      ['/rpc', post({ jsonrpc: '2.0', id: 'q', method: 'quota.get' })],
      [
        '/rpc',
        post([
          { jsonrpc: '2.0', id: 1, method: 'quota.get' },
          { jsonrpc: '2.0', id: 2, method: 'subdomains.list', params: {} },
          { jsonrpc: '2.0', id: 3, method: 'dns_records.list', params: { subdomain_id: id } },
          { jsonrpc: '2.0', id: 4, method: 'dns_records.list', params: { subdomain_id: 999999999 } },
          { jsonrpc: '2.0', method: 'quota.get' },
        ]),
      ],
      [
        '/rpc',
        post([
          { jsonrpc: '2.0', id: 'a', method: 'subdomains.list', params: { per_page: 1 } },
          { jsonrpc: '2.0', id: 'b', method: 'dns_records.list', params: { subdomain_id: id } },
          { jsonrpc: '2.0', id: 'c', method: 'quota.get' },
        ]),
      ],
      [
        '/graphql',
        post({
          query:
            '{ quota { quota { used total available } balance_cents } subdomains { subdomains { id full_domain status expires_at } next_cursor } }',
        }),
      ],
    ]
    const before = await memoised(b)
    for (const [path, init] of requests) {
      const texts = []
      // One request id for all, so the answers (errors carry it) can be compared whole.
      const same = { ...init, headers: { 'X-Request-Id': 'view-cache-parity' } }
      for (let i = 0; i < 3; i++) texts.push(await (await b(path, acct, same)).text())
      const expected = await (await plain(path, acct, same)).text()
      expect(texts).toEqual([expected, expected, expected])
    }
    // quota.get, the batch of reads and the query came again: their kept answers served.
    const after = await memoised(b)
    expect(after.rpc - before.rpc).toBeGreaterThanOrEqual(4)
    expect(after.graphql - before.graphql).toBeGreaterThanOrEqual(2)
  })
})

describe('whole answers of repeated reads (answer memo) across two replicas', () => {
  let a: Replica
  let b: Replica
  beforeAll(async () => {
    a = await replica()
    b = await replica()
  })
  const batchOf = (id: number) =>
    post([
      { jsonrpc: '2.0', id: 1, method: 'quota.get' },
      { jsonrpc: '2.0', id: 2, method: 'subdomains.list', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'dns_records.list', params: { subdomain_id: id } },
    ])
  const queryOf = (id: number) =>
    post({
      query: `{ quota { quota { used } } dnsRecords(subdomain_id: ${id}) { dns_records { name content } } }`,
    })
  const namesIn = (batch: Json) => batch[2].result.dns_records.map((r: { name: string }) => r.name)
  const namesOf = (gql: Json) => gql.data.dnsRecords.dns_records.map((r: { name: string }) => r.name)

  it('when a batch and a query come again, then the kept answer serves them until a write on the other replica, which the next one shows', async () => {
    const { a: acct, zone, id } = await accountWithSubdomain(a)
    for (let i = 0; i < 3; i++) {
      await json(b('/rpc', acct, batchOf(id)))
      await json(b('/graphql', acct, queryOf(id)))
    }
    // Proves the kept answer serves: the database holds a record the answers do not show.
    await sql(
      `INSERT INTO $schema."dns_record" (subdomain_id, name, type, content, ttl, state, created_at, updated_at)
       VALUES ($1, 'sql', 'TXT', 'by hand', 3600, 'active', now(), now())`,
      id,
    )
    const before = await memoised(b)
    expect(namesIn(await json(b('/rpc', acct, batchOf(id))))).toEqual([])
    expect(namesOf(await json(b('/graphql', acct, queryOf(id))))).toEqual([])
    expect(await memoised(b)).toEqual({ rpc: before.rpc + 1, graphql: before.graphql + 1 })

    // A record written through the other replica: the very next answers are made again.
    await json(
      a(`/rest/subdomains/${id}/records`, acct, post({ type: 'A', name: 'www', content: '8.8.8.8' })),
    )
    expect(namesIn(await json(b('/rpc', acct, batchOf(id))))).toEqual(['sql', 'www'])
    expect(namesOf(await json(b('/graphql', acct, queryOf(id))))).toEqual(['sql', 'www'])
    expect(await memoised(b)).toEqual({ rpc: before.rpc + 1, graphql: before.graphql + 1 })
    // And kept again.
    expect(namesIn(await json(b('/rpc', acct, batchOf(id))))).toEqual(['sql', 'www'])
    expect((await memoised(b)).rpc).toBe(before.rpc + 2)

    // A subdomain made on the other replica: the page and the quota in the next batch show it.
    await json(a('/rest/subdomains', acct, post({ subdomain: 'shop', rootdomain: zone })))
    const next = await json(b('/rpc', acct, batchOf(id)))
    expect(next[0].result.quota.used).toBe(2)
    expect(next[1].result.subdomains).toHaveLength(2)
    expect(namesOf(await json(b('/graphql', acct, queryOf(id))))).toEqual(['sql', 'www'])
  })

  it('when a kept answer’s credential is regenerated, or the request comes from an address off the allow list, then it is refused as any request is', async () => {
    const zone = `${unique('v')}.test`
    await addZone(deps, zone)
    const acct = await createAccount(deps, { quota: 10, allowList: ['198.51.100.0/24'] })
    const from = (ip: string) => ({ headers: { 'X-Forwarded-For': ip } })
    const made = await json(
      a('/rest/subdomains', acct, {
        ...post({ subdomain: 'home', rootdomain: zone }),
        ...from('198.51.100.7'),
      }),
    )
    const id = made.subdomain.id as number
    const texts = []
    for (let i = 0; i < 3; i++)
      texts.push(await (await b('/rpc', acct, { ...batchOf(id), ...from('198.51.100.7') })).text())
    const hits = (await memoised(b)).rpc
    expect(texts[2]).toBe(texts[0])

    const off = await b('/rpc', acct, { ...batchOf(id), ...from('203.0.113.9') })
    // JSON-RPC answers a refusal with HTTP 200 and the error under each call's id (issue 43).
    expect([off.status, ((await off.json()) as Json[])[0]!.error.data.error_code]).toEqual([
      200,
      'auth_ip_not_allowed',
    ])

    const keys = await json(a('/rest/keys', acct, from('198.51.100.7')))
    const regenerated = await json(
      a(`/rest/keys/${keys.keys[0].id}/regenerate`, acct, { method: 'POST', ...from('198.51.100.7') }),
    )
    const old = await b('/rpc', acct, { ...batchOf(id), ...from('198.51.100.7') })
    expect([old.status, ((await old.json()) as Json[])[0]!.error.data.error_code]).toEqual([
      200,
      'auth_invalid_credentials',
    ])
    const fresh = { headers: { 'X-API-Key': acct.apiKey, 'X-API-Secret': regenerated.key.api_secret } }
    const again = await b('/rpc', fresh, { ...batchOf(id), ...from('198.51.100.7') })
    expect(await again.text()).toBe(texts[0])
    expect((await memoised(b)).rpc).toBe(hits)
  })

  it('when a held credential’s points are spent in authentication’s kv command, then a wrong secret, an address off the allow list or API access off spend none, and a copy older than a change spends once', async () => {
    const zone = `${unique('v')}.test`
    await addZone(deps, zone)
    const acct = await createAccount(deps, { quota: 10, allowList: ['198.51.100.0/24'] })
    const [credential] = await deps.db.$queryRawUnsafe<Array<{ id: string }>>(
      `SELECT id FROM ${quoteIdent(deps.database.schema)}."api_credential" WHERE public_key = $1`,
      acct.apiKey,
    )
    const spent = async () => Number(await redisGet(`rl:dns-manager:credential:cred:${credential!.id}`))
    const from = (ip: string, init: RequestInit = {}) => ({ ...init, headers: { 'X-Forwarded-For': ip } })
    const made = await json(
      a('/rest/subdomains', acct, from('198.51.100.7', post({ subdomain: 'home', rootdomain: zone }))),
    )
    const batch = batchOf(made.subdomain.id as number)
    for (let i = 0; i < 4; i++) await json(b('/rpc', acct, from('198.51.100.7', batch)))
    await json(b('/rest/quota', acct, from('198.51.100.7')))
    const hits = (await memoised(b)).rpc
    // One point making the subdomain, three a batch, one the quota.
    expect(await spent()).toBe(1 + 4 * 3 + 1)

    // The kept answer and the REST read, each point once.
    await json(b('/rpc', acct, from('198.51.100.7', batch)))
    await json(b('/rest/quota', acct, from('198.51.100.7')))
    expect((await memoised(b)).rpc).toBe(hits + 1)
    expect(await spent()).toBe(18)

    const statusOf = async (res: Promise<Response>) => (await res).status
    // JSON-RPC answers a refusal with HTTP 200 and the error under each call's id (issue 43):
    // its http_status, the same for every call.
    const rpcStatusOf = async (res: Promise<Response>) => {
      const answer = await res
      expect(answer.status).toBe(200)
      const statuses = ((await answer.json()) as Json[]).map((r) => r.error.data.http_status as number)
      expect(new Set(statuses).size).toBe(1)
      return statuses[0]
    }
    const wrong = { headers: { 'X-API-Key': acct.apiKey, 'X-API-Secret': 'not-the-secret' } }
    for (let i = 0; i < 3; i++) {
      expect(await rpcStatusOf(b('/rpc', wrong, from('198.51.100.8', batch)))).toBe(401)
      expect(await statusOf(b('/rest/quota', wrong, from('198.51.100.8')))).toBe(401)
      expect(await rpcStatusOf(b('/rpc', acct, from('203.0.113.9', batch)))).toBe(403)
      expect(await statusOf(b('/rest/quota', acct, from('203.0.113.9')))).toBe(403)
    }
    expect(await spent()).toBe(18)

    // API access switched off as the service does it: committed, then the account's token replaced.
    await sql(`UPDATE $schema."account" SET api_access_enabled = false WHERE id = $1::uuid`, acct.accountId)
    const kv = RedisKeyValueStore.connect(redis.url, prefix)
    kvs.push(kv)
    await kv.set(accountVersionKey(acct.accountId), 'switched off', 60_000)
    // The first request still finds the copy read before the change: its points are taken with
    // authentication's command, then the database refuses it. The copy is then the new one.
    expect(await rpcStatusOf(b('/rpc', acct, from('198.51.100.7', batch)))).toBe(403)
    expect(await spent()).toBe(21)
    for (let i = 0; i < 3; i++) {
      expect(await rpcStatusOf(b('/rpc', acct, from('198.51.100.7', batch)))).toBe(403)
      expect(await statusOf(b('/rest/quota', acct, from('198.51.100.7')))).toBe(403)
    }
    expect(await spent()).toBe(21)
  })

  it('when a kept answer’s request crosses the rate limit, then each call is served or refused as without it, and no point is spent twice', async () => {
    const limited = await replica({ env: { RATE_LIMIT_PER_MINUTE: '46' } })
    // Its subdomain was made with the same credential: one point of 46 spent.
    const { a: acct, id } = await accountWithSubdomain(a)
    const [credential] = await deps.db.$queryRawUnsafe<Array<{ id: string }>>(
      `SELECT id FROM ${quoteIdent(deps.database.schema)}."api_credential" WHERE public_key = $1`,
      acct.apiKey,
    )
    const ten = post(
      Array.from({ length: 10 }, (_, i) =>
        i % 2
          ? { jsonrpc: '2.0', id: i, method: 'quota.get' }
          : { jsonrpc: '2.0', id: i, method: 'dns_records.list', params: { subdomain_id: id } },
      ),
    )
    const answers: Array<{ status: number; body: Json[] }> = []
    const hits: number[] = []
    for (let i = 0; i < 6; i++) {
      const res = await limited('/rpc', acct, ten)
      answers.push({ status: res.status, body: (await res.json()) as Json[] })
      hits.push((await memoised(limited)).rpc)
    }
    const shape = (body: Json[]) => body.map((r) => (r.result ? 'ok' : r.error.data.error_code))
    const refused = Array<string>(5).fill('rate_limit_exceeded')
    expect(answers.map((x) => x.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(answers.map((x) => shape(x.body))).toEqual([
      ...Array(4).fill(Array(10).fill('ok')),
      [...Array(5).fill('ok'), ...refused],
      [...refused, ...refused],
    ])
    // The fourth was the kept answer (the first ones cached the principal, then the views);
    // the fifth found it too, and ran its calls with the points it had taken for them (points
    // 42-51: five allowed, five refused).
    expect([hits[3]! - hits[2]!, hits[4]! - hits[3]!]).toEqual([1, 1])
    expect(answers[3]).toEqual(answers[0])
    expect(answers[4]!.body.slice(0, 5)).toEqual(answers[0]!.body.slice(0, 5))
    const counter = await redisGet(`rl:dns-manager:credential:cred:${credential!.id}`)
    expect(counter).toBe('61')
  })

  it('when a kept query crosses the rate limit, then the field past it is refused as without the memo', async () => {
    const limited = await replica({ env: { RATE_LIMIT_PER_MINUTE: '6' } })
    // One point of 6 spent making the subdomain, two per query.
    const { a: acct, id } = await accountWithSubdomain(a)
    const before = await memoised(limited)
    const answers: Json[] = []
    for (let i = 0; i < 3; i++) answers.push(await (await limited('/graphql', acct, queryOf(id))).json())
    expect(answers[1]).toEqual(answers[0])
    expect((await memoised(limited)).graphql).toBe(before.graphql + 1)
    // Points 6 and 7: quota is served (the first root field), dnsRecords refused.
    expect(answers[2]!.data.quota).toEqual(answers[0]!.data.quota)
    expect(answers[2]!.data.dnsRecords).toBeNull()
    expect(answers[2]!.errors.map((e: Json) => [e.path, e.extensions.code])).toEqual([
      [['dnsRecords'], 'rate_limit_exceeded'],
    ])
  })
})

describe('a cached page of subdomains and the clock', () => {
  it('when a subdomain on a cached page expires, and later its grace ends, then the page turns with no write', async () => {
    const clock = fixedClock('2030-01-01T00:00:00.000Z')
    const app = await replica({ clock })
    const { a: acct, id } = await accountWithSubdomain(app)
    const status = async () =>
      (await json(app('/rest/subdomains', acct))).subdomains.find((s: { id: number }) => s.id === id)
        .status as string
    /** Moves the expiry by SQL, then makes the replicas read again through a write (a record). */
    let n = 0
    const expireAt = async (at: number) => {
      await sql(`UPDATE $schema."subdomain" SET expires_at = $2 WHERE id = $1`, id, new Date(at))
      await json(
        app(`/rest/subdomains/${id}/records`, acct, post({ type: 'TXT', name: `t${n++}`, content: 'x' })),
      )
    }
    const now = clock.now().getTime()

    // Within the cache's maximum age (10 min here), so only the page's own time can turn it.
    await expireAt(now + 60_000)
    await warm(app, acct, ['/rest/subdomains'])
    clock.set(new Date(now + 59_999))
    expect(await status()).toBe('active')
    clock.set(new Date(now + 60_000))
    expect(await status()).toBe('grace')

    await expireAt(now + 60_000 - 45 * DAY + 60_000)
    await warm(app, acct, ['/rest/subdomains'])
    expect(await status()).toBe('grace')
    clock.set(new Date(now + 120_000))
    expect(await status()).toBe('suspended')
  })
})
