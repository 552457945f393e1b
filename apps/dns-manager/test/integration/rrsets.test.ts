import { request } from '@quartet/core/testing'
import {
  addZone,
  buildApp,
  createAccount,
  type Express,
  type TestAccount,
  unique,
  useDeps,
} from '../helpers.ts'
import { describeWithPowerDns, dig, powerDnsApp, usePowerDns } from '../support/powerdns.ts'

/** The API is RRset-honest: one TTL per RRset, and nothing accepted that a delegation would hide. */
const deps = useDeps()

async function subdomain(app: Express, a: TestAccount, label = 'host') {
  const zone = `${unique('rr')}.test`
  await addZone(deps, zone)
  const res = await request(app)
    .post('/rest/subdomains')
    .set(a.headers)
    .send({ subdomain: label, rootdomain: zone })
  expect(res.status).toBe(201)
  return { id: res.body.subdomain.id as number, full: res.body.subdomain.full_domain as string, zone }
}

const post = (app: Express, a: TestAccount, id: number, body: object) =>
  request(app).post(`/rest/subdomains/${id}/records`).set(a.headers).send(body)

async function ttls(app: Express, a: TestAccount, id: number) {
  const res = await request(app).get(`/rest/subdomains/${id}/records`).set(a.headers).expect(200)
  return Object.fromEntries(
    (res.body.dns_records as Array<{ name: string; type: string; content: string; ttl: number }>).map((r) => [
      `${r.name} ${r.type} ${r.content}`,
      r.ttl,
    ]),
  )
}

describe('one TTL per RRset (RFC 2181 §5.2)', () => {
  it('when records of one name and type are given different TTLs, then the last TTL given is the whole RRset’s, and a record given none joins it', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    await post(app, a, s.id, { type: 'A', content: '1.1.1.1', ttl: 300 }).expect(201)
    const second = await post(app, a, s.id, { type: 'A', content: '8.8.8.8', ttl: 3600 }).expect(201)
    expect(second.body.dns_record.ttl).toBe(3600)
    const third = await post(app, a, s.id, { type: 'A', content: '9.9.9.9' }).expect(201)
    expect(third.body.dns_record.ttl).toBe(3600)
    await post(app, a, s.id, { type: 'AAAA', content: '2606:4700::1111' }).expect(201)
    expect(await ttls(app, a, s.id)).toEqual({
      '@ A 1.1.1.1': 3600,
      '@ A 8.8.8.8': 3600,
      '@ A 9.9.9.9': 3600,
      '@ AAAA 2606:4700::1111': 600,
    })

    // Changing one record's TTL changes its RRset's.
    await request(app)
      .patch(`/rest/subdomains/${s.id}/records/${second.body.dns_record.id}`)
      .set(a.headers)
      .send({ ttl: 120 })
      .expect(200)
    // Moving a record to a new RRset keeps its TTL; moving it into an existing one joins that one's.
    await request(app)
      .patch(`/rest/subdomains/${s.id}/records/${third.body.dns_record.id}`)
      .set(a.headers)
      .send({ name: 'x' })
      .expect(200)
    expect(await ttls(app, a, s.id)).toEqual({
      '@ A 1.1.1.1': 120,
      '@ A 8.8.8.8': 120,
      'x A 9.9.9.9': 120,
      '@ AAAA 2606:4700::1111': 600,
    })
    await request(app)
      .patch(`/rest/subdomains/${s.id}/records/${third.body.dns_record.id}`)
      .set(a.headers)
      .send({ type: 'AAAA', content: '2606:4700::1001' })
      .expect(200)
    expect((await ttls(app, a, s.id))['x AAAA 2606:4700::1001']).toBe(120)
    await request(app)
      .patch(`/rest/subdomains/${s.id}/records/${third.body.dns_record.id}`)
      .set(a.headers)
      .send({ name: '@' })
      .expect(200)
    expect((await ttls(app, a, s.id))['@ AAAA 2606:4700::1001']).toBe(600)
  })
})

describe('delegations (NS)', () => {
  it.each([
    [
      'A beside NS at one name',
      [{ type: 'NS', name: 'd', content: 'ns1.example.net' }],
      { type: 'A', name: 'd', content: '8.8.8.8' },
      'type',
      /d is delegated \(NS\), so it cannot hold A/,
    ],
    [
      'TXT beside NS',
      [{ type: 'NS', name: 'd', content: 'ns1.example.net' }],
      { type: 'TXT', name: 'd', content: 'x' },
      'type',
      /cannot hold TXT/,
    ],
    [
      'NS beside an A',
      [{ type: 'A', name: 'd', content: '8.8.8.8' }],
      { type: 'NS', name: 'd', content: 'ns1.example.net' },
      'type',
      /d holds A records, so it cannot be delegated/,
    ],
    [
      'a record below a delegation',
      [{ type: 'NS', name: 'd', content: 'ns1.example.net' }],
      { type: 'A', name: 'h.d', content: '8.8.8.8' },
      'name',
      /h\.d lies below d, which is delegated/,
    ],
    [
      'a wildcard below a delegation',
      [{ type: 'NS', name: 'd', content: 'ns1.example.net' }],
      { type: 'TXT', name: '*.d', content: 'x' },
      'name',
      /lies below d/,
    ],
    [
      'a delegation above records',
      [{ type: 'A', name: 'x.f', content: '8.8.8.8' }],
      { type: 'NS', name: 'f', content: 'ns1.example.net' },
      'name',
      /f cannot be delegated while x\.f holds A records below it/,
    ],
    ['NS at a wildcard', [], { type: 'NS', name: '*', content: 'ns1.example.net' }, 'name', /wildcard/],
    [
      'NS at the subdomain while it has records',
      [{ type: 'A', name: 'www', content: '8.8.8.8' }],
      { type: 'NS', name: '@', content: 'ns1.example.net' },
      'name',
      /@ cannot be delegated while www holds A/,
    ],
    [
      'a record in a subdomain delegated at @',
      [{ type: 'NS', name: '@', content: 'ns1.example.net' }],
      { type: 'A', name: 'www', content: '8.8.8.8' },
      'name',
      /www lies below @/,
    ],
    [
      'glue that is no NS target',
      [{ type: 'NS', name: 'd', content: 'ns1.example.net' }],
      { type: 'A', name: 'ns.d', content: '8.8.8.8' },
      'name',
      /only A\/AAAA glue for its nameservers \(ns1\.example\.net\)/,
    ],
  ])('when %s is written, then 400 naming the field and why', async (_what, before, body, field, message) => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    for (const r of before) await post(app, a, s.id, r).expect(201)
    const res = await post(app, a, s.id, body).expect(400)
    expect(res.body.error.code).toBe('bad_request')
    expect(res.body.error.details.field).toBe(field)
    expect(res.body.error.message).toMatch(message)
  })

  it('when a delegation has its nameserver below it, then A/AAAA glue for it is accepted, and nothing else there', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    await post(app, a, s.id, { type: 'A', name: 'ns.d', content: '8.8.8.8' }).expect(201)
    await post(app, a, s.id, { type: 'AAAA', name: 'ns.d', content: '2606:4700::1111' }).expect(201)
    await post(app, a, s.id, { type: 'NS', name: 'd', content: `ns.d.${s.full}.` }).expect(201)
    await post(app, a, s.id, { type: 'NS', name: 'd', content: 'ns1.example.net' }).expect(201)
    await post(app, a, s.id, { type: 'TXT', name: 'ns.d', content: 'x' }).expect(400)
    // A whole subdomain may be delegated: NS at @ and nothing else.
    const t = await subdomain(app, a, 'elsewhere')
    await post(app, a, t.id, { type: 'NS', name: '@', content: 'ns1.example.net' }).expect(201)
    await post(app, a, t.id, { type: 'NS', name: '@', content: 'ns2.example.net' }).expect(201)
  })

  it('when a record is moved below a delegation by an update, then 400, and in JSON-RPC and GraphQL alike', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    await post(app, a, s.id, { type: 'NS', name: 'd', content: 'ns1.example.net' }).expect(201)
    const rec = await post(app, a, s.id, { type: 'A', name: 'free', content: '8.8.8.8' }).expect(201)
    const rest = await request(app)
      .patch(`/rest/subdomains/${s.id}/records/${rec.body.dns_record.id}`)
      .set(a.headers)
      .send({ name: 'h.d' })
      .expect(400)
    expect(rest.body.error.details.field).toBe('name')
    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'dns_records.create',
        params: { subdomain_id: s.id, type: 'A', name: 'h.d', content: '8.8.8.8' },
      })
      .expect(200)
    expect(rpc.body.error).toMatchObject({
      code: -32602,
      data: { error_code: 'bad_request', http_status: 400, details: { field: 'name' } },
    })
    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `mutation { createDnsRecord(subdomain_id: ${s.id}, type: "TXT", name: "d", content: "x") { dns_record { id } } }`,
      })
      // A field error beside data (null): 200, as GraphQL over HTTP has it (issue 43).
      .expect(200)
    expect(gql.body.errors[0].extensions).toMatchObject({ code: 'bad_request', details: { field: 'type' } })
  })
})

describeWithPowerDns('the TTL the API shows is the TTL PowerDNS serves', () => {
  const pdns = usePowerDns()

  it('when records of one RRset get different TTLs, then dig shows the API’s TTL on every record; a failed change leaves all of them as they were', async () => {
    const { app, useCases, zone, a } = await powerDnsApp(deps, pdns, {
      prefix: 'rt',
      timeoutMs: 1000,
      env: { PROVIDER_TIMEOUT_MS: '1000' },
    })
    const s = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'web', rootdomain: zone })
      .expect(201)
    const id = s.body.subdomain.id
    const fqdn = `web.${zone}`
    await post(app, a, id, { type: 'A', content: '1.2.8.1', ttl: 300 }).expect(201)
    const second = await post(app, a, id, { type: 'A', content: '1.2.8.2', ttl: 3600 }).expect(201)
    expect(dig(pdns, fqdn, 'A')).toEqual([
      { ttl: 3600, rdata: '1.2.8.1' },
      { ttl: 3600, rdata: '1.2.8.2' },
    ])
    expect(Object.values(await ttls(app, a, id))).toEqual([3600, 3600])

    pdns.freeze()
    const res = await request(app)
      .patch(`/rest/subdomains/${id}/records/${second.body.dns_record.id}`)
      .set(a.headers)
      .send({ ttl: 120 })
    pdns.thaw()
    expect(res.status).toBe(502)
    expect(Object.values(await ttls(app, a, id))).toEqual([3600, 3600])
    await new Promise((r) => setTimeout(r, 1500)) // PowerDNS applies what it had taken
    await useCases.repairUpstream()
    expect(dig(pdns, fqdn, 'A').map((x) => x.ttl)).toEqual([3600, 3600])
  })
})
