import { fixedClock } from '@quartet/core/clock'
import { request } from '@quartet/core/testing'
import { createRepository } from '../../src/store/repository.ts'
import { addZone, buildApp, createAccount, type TestAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

async function subdomain(
  app: Parameters<typeof request>[0],
  a: TestAccount,
): Promise<{ id: number; full: string }> {
  const root = `${unique('r')}.test`
  await addZone(deps, root)
  const res = await request(app)
    .post('/rest/subdomains')
    .set(a.headers)
    .send({ subdomain: 'host', rootdomain: root })
    .expect(201)
  return { id: res.body.subdomain.id, full: res.body.subdomain.full_domain }
}

describe('DNS records on the database provider', () => {
  it('when records of every type are valid, then they are created with their fields and listed', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const ok = [
      { type: 'A', name: '@', content: '8.8.4.4' },
      { type: 'AAAA', name: 'v6', content: '2606:4700:4700::1111', ttl: 3600 },
      { type: 'CNAME', name: 'www', content: 'target.example.com.' },
      { type: 'MX', content: 'mx.example.com', priority: 10 },
      { type: 'TXT', name: '_dmarc', content: 'v=DMARC1; p=none' },
      { type: 'NS', name: 'sub', content: 'ns1.example.com' },
      { type: 'SRV', name: '_sip._tcp', content: 'sip.example.com', priority: 10, weight: 5, port: 5060 },
      { type: 'caa', content: 'letsencrypt.org', flag: 0, tag: 'issue' },
      { type: 'A', name: '*.dev', content: '1.1.1.1' },
    ]
    for (const r of ok)
      await request(app).post(`/rest/subdomains/${s.id}/records`).set(a.headers).send(r).expect(201)
    const list = await request(app).get(`/rest/subdomains/${s.id}/records`).set(a.headers).expect(200)
    expect(list.body.dns_records).toHaveLength(ok.length)
    expect(list.body.dns_records[0]).toEqual({
      id: expect.any(Number),
      name: '@',
      type: 'A',
      content: '8.8.4.4',
      ttl: 600,
      priority: null,
      weight: null,
      port: null,
      flag: null,
      tag: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    })
    expect(list.body.dns_records[2]).toMatchObject({ type: 'CNAME', content: 'target.example.com' })
    expect(list.body.dns_records[7]).toMatchObject({ type: 'CAA', tag: 'issue', flag: 0 })
    const filtered = await request(app)
      .get(`/rest/subdomains/${s.id}/records`)
      .query({ type: 'mx' })
      .set(a.headers)
      .expect(200)
    expect(filtered.body.dns_records).toHaveLength(1)
  })

  it.each([
    ['a private IPv4', { type: 'A', content: '10.1.2.3' }, 'content'],
    ['a loopback IPv4', { type: 'A', content: '127.0.0.1' }, 'content'],
    ['a documentation IPv4', { type: 'A', content: '192.0.2.1' }, 'content'],
    ['a link-local IPv4', { type: 'A', content: '169.254.1.1' }, 'content'],
    ['not an address', { type: 'A', content: '1.2.3' }, 'content'],
    ['a v6 address in an A record', { type: 'A', content: '2606:4700::1' }, 'content'],
    ['loopback IPv6', { type: 'AAAA', content: '::1' }, 'content'],
    ['documentation IPv6', { type: 'AAAA', content: '2001:db8::1' }, 'content'],
    ['unique-local IPv6', { type: 'AAAA', content: 'fd00::1' }, 'content'],
    ['a TTL below 60', { type: 'A', content: '8.8.8.8', ttl: 59 }, 'ttl'],
    ['a TTL above 86400', { type: 'A', content: '8.8.8.8', ttl: 86401 }, 'ttl'],
    ['an MX without priority', { type: 'MX', content: 'mx.example.com' }, 'priority'],
    ['an MX priority of 65536', { type: 'MX', content: 'mx.example.com', priority: 65536 }, 'priority'],
    [
      'an MX target that is an address-like garbage',
      { type: 'MX', content: 'not a host', priority: 1 },
      'content',
    ],
    [
      'an SRV port above 65535',
      { type: 'SRV', name: '_x._tcp', content: 'x.example.com', priority: 1, weight: 1, port: 65536 },
      'port',
    ],
    [
      'an SRV without weight',
      { type: 'SRV', name: '_x._tcp', content: 'x.example.com', priority: 1, port: 5 },
      'weight',
    ],
    ['a CAA tag outside issue/issuewild/iodef', { type: 'CAA', content: 'ca.example', tag: 'policy' }, 'tag'],
    ['a CAA flag of 256', { type: 'CAA', content: 'ca.example', tag: 'issue', flag: 256 }, 'flag'],
    ['a wildcard that is not leftmost', { type: 'A', name: 'a.*', content: '8.8.8.8' }, 'name'],
    ['an unknown type', { type: 'PTR', content: 'x.example.com' }, 'type'],
    ['a missing content', { type: 'A' }, 'content'],
  ])('when a record has %s, then 400 bad_request names the field', async (_what, body, field) => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const res = await request(app)
      .post(`/rest/subdomains/${s.id}/records`)
      .set(a.headers)
      .send(body)
      .expect(400)
    expect(res.body.error.code).toBe('bad_request')
    expect(res.body.error.details.field).toBe(field)
    expect(
      (await request(app).get(`/rest/subdomains/${s.id}/records`).set(a.headers)).body.dns_records,
    ).toEqual([])
  })

  it('when records are listed, then an empty subdomain gives an empty page, a cursor pages on, and a subdomain of another account or none is 404', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const other = await createAccount(deps)
    const s = await subdomain(app, a)
    const list = (headers: Record<string, string>, id: number, query: Record<string, string> = {}) =>
      request(app).get(`/rest/subdomains/${id}/records`).query(query).set(headers)
    expect((await list(a.headers, s.id).expect(200)).body).toEqual({
      success: true,
      dns_records: [],
      next_cursor: null,
    })
    for (const n of [1, 2, 3])
      await request(app)
        .post(`/rest/subdomains/${s.id}/records`)
        .set(a.headers)
        .send({ type: 'A', name: `h${n}`, content: `9.9.9.${n}` })
        .expect(201)
    const first = (await list(a.headers, s.id, { per_page: '2' }).expect(200)).body
    expect(first.dns_records.map((r: { name: string }) => r.name)).toEqual(['h1', 'h2'])
    const second = (await list(a.headers, s.id, { per_page: '2', cursor: first.next_cursor }).expect(200))
      .body
    expect(second).toMatchObject({ dns_records: [{ name: 'h3' }], next_cursor: null })
    const past = (await list(a.headers, s.id, { cursor: String(second.dns_records[0].id) }).expect(200)).body
    expect(past.dns_records).toEqual([])
    // Another account's subdomain, with records or not, and one that does not exist: the same 404.
    for (const [headers, id] of [
      [other.headers, s.id],
      [a.headers, 2_000_000_000],
    ] as const) {
      const res = await list(headers, id).expect(404)
      expect(res.body.error.code).toBe('subdomain_not_found')
    }
  })

  it('when a CNAME would share a name or point to itself, then 400; other records cannot join a CNAME', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const post = (body: object) =>
      request(app).post(`/rest/subdomains/${s.id}/records`).set(a.headers).send(body)
    await post({ type: 'A', name: 'app', content: '8.8.8.8' }).expect(201)
    expect(
      (await post({ type: 'CNAME', name: 'app', content: 'x.example.com' }).expect(400)).body.error.details
        .field,
    ).toBe('type')
    await post({ type: 'CNAME', name: 'alias', content: 'x.example.com' }).expect(201)
    await post({ type: 'TXT', name: 'alias', content: 'hello' }).expect(400)
    await post({ type: 'CNAME', name: 'alias', content: 'y.example.com' }).expect(400)
    const self = await post({ type: 'CNAME', name: 'loop', content: `loop.${s.full}` }).expect(400)
    expect(self.body.error.message).toContain('itself')
  })

  it('when a subdomain holds the configured maximum of records, then the next one is 400', async () => {
    const { app } = buildApp(deps, { env: { MAX_RECORDS_PER_SUBDOMAIN: '2' } })
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    for (const ip of ['8.8.8.8', '8.8.4.4'])
      await request(app)
        .post(`/rest/subdomains/${s.id}/records`)
        .set(a.headers)
        .send({ type: 'A', content: ip })
        .expect(201)
    const res = await request(app)
      .post(`/rest/subdomains/${s.id}/records`)
      .set(a.headers)
      .send({ type: 'A', content: '1.1.1.1' })
      .expect(400)
    expect(res.body.error.details.limit).toBe(2)
  })

  it('when a record is updated (POST or PATCH) and deleted (POST …/delete or DELETE), then reads follow', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const base = `/rest/subdomains/${s.id}/records`
    const r = await request(app)
      .post(base)
      .set(a.headers)
      .send({ type: 'A', name: 'api2', content: '8.8.8.8' })
      .expect(201)
    const id = r.body.dns_record.id
    const up = await request(app)
      .patch(`${base}/${id}`)
      .set(a.headers)
      .send({ content: '1.1.1.1', ttl: 120 })
      .expect(200)
    expect(up.body.dns_record).toMatchObject({ id, name: 'api2', content: '1.1.1.1', ttl: 120 })
    const up2 = await request(app).post(`${base}/${id}`).set(a.headers).send({ name: 'api3' }).expect(200)
    expect(up2.body.dns_record).toMatchObject({ name: 'api3', content: '1.1.1.1' })
    await request(app).patch(`${base}/${id}`).set(a.headers).send({ content: '10.0.0.1' }).expect(400)
    await request(app).get(`${base}/${id}`).set(a.headers).expect(200)
    await request(app)
      .delete(`${base}/${id}`)
      .set(a.headers)
      .expect(200, { success: true, deleted: true, id })
    const gone = await request(app).get(`${base}/${id}`).set(a.headers).expect(404)
    expect(gone.body.error.code).toBe('dns_record_not_found')
    await request(app).post(`${base}/${id}/delete`).set(a.headers).expect(404)
    await request(app)
      .post(`/rest/subdomains/999999/records`)
      .set(a.headers)
      .send({ type: 'A', content: '8.8.8.8' })
      .expect(404)
  })

  it('when TXT content is longer than 255 bytes, then the zone file carries it as 255-byte strings', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const long = 'a'.repeat(300)
    await request(app)
      .post(`/rest/subdomains/${s.id}/records`)
      .set(a.headers)
      .send({ type: 'TXT', content: long })
      .expect(201)
    const zone = await request(app).get(`/rest/subdomains/${s.id}/zone`).set(a.headers).expect(200)
    expect(zone.text).toContain(`@ 600 IN TXT "${'a'.repeat(255)}" "${'a'.repeat(45)}"`)
  })

  it('when a write was left pending by a crash, then it is invisible and the reconcile job rolls it back', async () => {
    const clock = fixedClock(new Date())
    const { app, useCases } = buildApp(deps, { clock })
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const kept = await request(app)
      .post(`/rest/subdomains/${s.id}/records`)
      .set(a.headers)
      .send({ type: 'A', name: 'kept', content: '8.8.8.8' })
      .expect(201)
    const repo = createRepository(deps.db, deps.database.schema)
    // Phase 1 of three writes, then "crash" before the provider call.
    const values = { ttl: 600, priority: null, weight: null, port: null, flag: null, tag: null }
    const created = await repo.beginRecordChange(a.accountId, s.id, clock.now(), () => ({
      op: 'create',
      values: { ...values, name: 'ghost', type: 'A', content: '9.9.9.9' },
    }))
    await repo.beginRecordChange(a.accountId, s.id, clock.now(), () => ({
      op: 'update',
      id: kept.body.dns_record.id,
      values: { ...values, name: 'kept', type: 'A', content: '4.4.4.4' },
    }))
    const list = await request(app).get(`/rest/subdomains/${s.id}/records`).set(a.headers).expect(200)
    expect(
      list.body.dns_records.map((r: { name: string; content: string }) => `${r.name}=${r.content}`),
    ).toEqual(['kept=8.8.8.8'])
    expect((await useCases.reconcilePending()).rolled_back).toEqual([]) // not stale yet
    clock.advance(61_000)
    const result = await useCases.reconcilePending()
    expect(result.rolled_back.sort()).toEqual([created!.record.id, kept.body.dns_record.id].sort())
    const rows = await deps.database.query<{ name: string; content: string; state: string }>(
      'SELECT name, content, state FROM dns_record WHERE subdomain_id = $1 ORDER BY id',
      [s.id],
    )
    expect(rows.rows).toEqual([{ name: 'kept', content: '8.8.8.8', state: 'active' }])
  })
})
