import { createHash } from 'node:crypto'
import { request } from '@quartet/core/testing'
import { dns01TxtValue } from '../../src/domain/acme.ts'
import { addZone, buildApp, createAccount, type TestAccount, unique, useDeps } from '../helpers.ts'
import { type Caller, graphqlCaller, restCaller, rpcCaller } from '../support/callers.ts'

/** ACME DNS-01 (lego's httpreq protocol) and the ACME-only credential, on the database provider. */
const deps = useDeps()

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`
const txtValue = (seed: string) => createHash('sha256').update(seed).digest('base64url')

async function setup() {
  const built = buildApp(deps)
  const zone = `${unique('acme')}.test`
  await addZone(deps, zone)
  const a = await createAccount(deps, { quota: 3 })
  const make = async (account: TestAccount, label: string) => {
    const res = await request(built.app)
      .post('/rest/subdomains')
      .set(account.headers)
      .send({ subdomain: label, rootdomain: zone })
      .expect(201)
    return { id: res.body.subdomain.id as number, fqdn: `${label}.${zone}` }
  }
  const alice = await make(a, 'alice')
  return { ...built, zone, a, alice, make }
}

async function txtAt(app: Parameters<typeof request>[0], a: TestAccount, subdomainId: number, name: string) {
  const res = await request(app)
    .get(`/rest/subdomains/${subdomainId}/records`)
    .query({ type: 'TXT', name })
    .set(a.headers)
    .expect(200)
  return (res.body.dns_records as Array<{ content: string; ttl: number }>).map((r) => r.content).sort()
}

describe('ACME DNS-01 through lego’s httpreq protocol', () => {
  it('when a wildcard and its base name present two values at one name, then both are served, each cleanup removes only its own, and both are idempotent', async () => {
    const { app, a, alice } = await setup()
    const auth = basic(a.apiKey, a.apiSecret)
    const fqdn = `_acme-challenge.${alice.fqdn}.`
    const [v1, v2] = [txtValue('one'), txtValue('two')]

    const first = await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn, value: v1 })
      .expect(200)
    expect(first.body).toEqual({
      success: true,
      challenge: { fqdn, value: v1, subdomain_id: alice.id, changed: true },
    })
    expect(first.headers['cache-control']).toBe('no-store')
    await request(app)
      .post('/api/v1/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn, value: v2 })
      .expect(200)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([v1, v2].sort())
    const records = await request(app)
      .get(`/rest/subdomains/${alice.id}/records`)
      .query({ type: 'TXT' })
      .set(a.headers)
    expect(records.body.dns_records.map((r: { ttl: number }) => r.ttl)).toEqual([60, 60])

    // Presenting again (a retry after a lost answer) changes nothing.
    const again = await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn, value: v1 })
      .expect(200)
    expect(again.body.challenge.changed).toBe(false)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([v1, v2].sort())

    const cleaned = await request(app)
      .post('/rest/acme/httpreq/cleanup')
      .set('Authorization', auth)
      .send({ fqdn, value: v1 })
      .expect(200)
    expect(cleaned.body.challenge).toEqual({ fqdn, value: v1, subdomain_id: alice.id, changed: true })
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([v2])
    const twice = await request(app)
      .post('/rest/acme/httpreq/cleanup')
      .set('Authorization', auth)
      .send({ fqdn, value: v1 })
      .expect(200)
    expect(twice.body.challenge.changed).toBe(false)
    await request(app)
      .post('/rest/acme/httpreq/cleanup')
      .set('Authorization', auth)
      .send({ fqdn, value: v2 })
      .expect(200)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([])

    // Both are writes in the audit log, with what they did.
    const audit = await deps.db.auditLog.findMany({
      where: { accountId: a.accountId, operation: { startsWith: 'acme.' } },
      orderBy: { id: 'asc' },
    })
    expect(audit.map((e) => [e.operation, e.target, e.outcome])).toEqual([
      ['acme.present', `${fqdn} TXT ${v1}`, 'ok'],
      ['acme.present', `${fqdn} TXT ${v2}`, 'ok'],
      ['acme.present', `${fqdn} TXT ${v1}`, 'ok'],
      ['acme.cleanup', `${fqdn} TXT ${v1}`, 'ok'],
      ['acme.cleanup', `${fqdn} TXT ${v1}`, 'ok'],
      ['acme.cleanup', `${fqdn} TXT ${v2}`, 'ok'],
    ])
  })

  it('when lego sends RAW mode, then the value is base64url(SHA-256(keyAuth)) at _acme-challenge of the domain (RFC 8555 §8.4)', async () => {
    const { app, a, alice } = await setup()
    const keyAuth = 'evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.nP1qzpXGymHBrUEepNY9HCsQk7K8KhOypzEt62jcerQ'
    // The published example of RFC 8555 §8.4 is the digest of its key authorization.
    expect(dns01TxtValue(keyAuth)).toBe(createHash('sha256').update(keyAuth).digest('base64url'))
    const auth = basic(a.apiKey, a.apiSecret)
    await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ domain: alice.fqdn, token: keyAuth.split('.')[0], keyAuth })
      .expect(200)
    // A wildcard's domain in RAW mode is its base name; `*.` is accepted as well.
    await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ domain: `*.www.${alice.fqdn}`, token: 'tok', keyAuth: 'tok.thumb' })
      .expect(200)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([dns01TxtValue(keyAuth)])
    expect(await txtAt(app, a, alice.id, '_acme-challenge.www')).toEqual([dns01TxtValue('tok.thumb')])
    await request(app)
      .post('/rest/acme/httpreq/cleanup')
      .set('Authorization', auth)
      .send({ domain: alice.fqdn, token: keyAuth.split('.')[0], keyAuth })
      .expect(200)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([])
  })

  it('when the body is not a challenge, then 400 naming the field; outside the account, 404', async () => {
    const { app, a, alice, zone, make } = await setup()
    const auth = basic(a.apiKey, a.apiSecret)
    const cases: Array<[Record<string, unknown>, string]> = [
      [{}, 'fqdn'],
      [{ fqdn: `_acme-challenge.${alice.fqdn}.` }, 'value'],
      [{ fqdn: `www.${alice.fqdn}.`, value: txtValue('x') }, 'fqdn'],
      [{ fqdn: `_acme-challenge.${alice.fqdn}.`, value: 'has spaces "and quotes"' }, 'value'],
      [{ domain: alice.fqdn, token: 'a', keyAuth: 'b.c' }, 'keyAuth'],
      [{ domain: alice.fqdn, keyAuth: 'no-dot' }, 'keyAuth'],
      [{ domain: alice.fqdn }, 'keyAuth'],
    ]
    for (const [body, field] of cases) {
      const res = await request(app).post('/rest/acme/httpreq/present').set('Authorization', auth).send(body)
      expect([JSON.stringify(body), res.status, res.body.error?.details?.field]).toEqual([
        JSON.stringify(body),
        400,
        field,
      ])
    }
    await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn: `_acme-challenge.${alice.fqdn}`, value: 'v', domain: alice.fqdn })
      .expect(400)
    // The zone's own _acme-challenge is the operator's; another account's subdomain is unknown.
    const b = await createAccount(deps)
    const bob = await make(b, 'bob')
    for (const fqdn of [
      `_acme-challenge.${zone}.`,
      `_acme-challenge.${bob.fqdn}.`,
      '_acme-challenge.example.org.',
    ]) {
      const res = await request(app)
        .post('/rest/acme/httpreq/present')
        .set('Authorization', auth)
        .send({ fqdn, value: txtValue('x') })
      expect([fqdn, res.status, res.body.error.code]).toEqual([fqdn, 404, 'subdomain_not_found'])
    }
    const wrong = await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', basic(a.apiKey, 'wrong'))
      .send({ fqdn: `_acme-challenge.${alice.fqdn}.`, value: txtValue('x') })
    expect(wrong.status).toBe(401)
    expect(wrong.body.error.code).toBe('auth_invalid_credentials')
  })

  it('when many presents of one value race, then exactly one record exists and the rest answer unchanged or conflict', async () => {
    const { app, a, alice } = await setup()
    const auth = basic(a.apiKey, a.apiSecret)
    const body = { fqdn: `_acme-challenge.${alice.fqdn}.`, value: txtValue('race') }
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        request(app).post('/rest/acme/httpreq/present').set('Authorization', auth).send(body),
      ),
    )
    const changed = answers.filter((r) => r.status === 200 && r.body.challenge.changed).length
    expect(changed).toBe(1)
    for (const r of answers) expect([200, 409]).toContain(r.status)
    expect(await txtAt(app, a, alice.id, '_acme-challenge')).toEqual([body.value])
  })
})

describe('the ACME-only credential', () => {
  const styles: Array<[string, typeof restCaller]> = [
    ['REST', restCaller],
    ['JSON-RPC', rpcCaller],
    ['GraphQL', graphqlCaller],
  ]

  it.each(styles)(
    'when made and used through %s, then it writes _acme-challenge TXT records on its account’s subdomains and is refused everything else with 403 credential_scope_forbidden',
    async (_style, makeCaller) => {
      const { app, a, alice, make } = await setup()
      const other = await make(a, 'other')
      const owner: Caller = makeCaller(app, a)
      const made = (await owner('keys.create', { scope: 'acme' })) as {
        ok: { key: { api_key: string; api_secret: string; scope: string; subdomain_id: number | null } }
      }
      expect(made.ok.key).toMatchObject({ scope: 'acme', subdomain_id: null })
      const acmeHeaders = { 'X-API-Key': made.ok.key.api_key, 'X-API-Secret': made.ok.key.api_secret }
      const acme: Caller = makeCaller(app, { headers: acmeHeaders })

      // What it may do, on every subdomain of the account.
      for (const s of [alice, other]) {
        const p = await acme('acme.present', {
          fqdn: `_acme-challenge.${s.fqdn}.`,
          value: txtValue(s.fqdn),
        })
        expect(p).toEqual({
          ok: {
            challenge: {
              fqdn: `_acme-challenge.${s.fqdn}.`,
              value: txtValue(s.fqdn),
              subdomain_id: s.id,
              changed: true,
            },
          },
        })
      }
      const rec = (await acme('dns_records.create', {
        subdomain_id: alice.id,
        type: 'TXT',
        name: '_acme-challenge.www',
        content: txtValue('w'),
      })) as { ok: { dns_record: { id: number } } }
      expect(rec.ok.dns_record).toMatchObject({ name: '_acme-challenge.www', type: 'TXT' })
      expect(
        await acme('dns_records.update', { subdomain_id: alice.id, id: rec.ok.dns_record.id, content: 'x2' }),
      ).toMatchObject({ ok: { dns_record: { content: 'x2' } } })

      // Everything else.
      const refused: Array<[string, Record<string, unknown>]> = [
        ['dns_records.create', { subdomain_id: alice.id, type: 'A', name: 'www', content: '8.8.8.8' }],
        ['dns_records.create', { subdomain_id: alice.id, type: 'TXT', name: '@', content: 'v=spf1 -all' }],
        [
          'dns_records.create',
          { subdomain_id: alice.id, type: 'CNAME', name: '_acme-challenge.x', content: 'a.example.com' },
        ],
        ['dns_records.update', { subdomain_id: alice.id, id: rec.ok.dns_record.id, name: 'www' }],
        ['dns_records.list', { subdomain_id: alice.id }],
        ['subdomains.list', {}],
        ['subdomains.create', { subdomain: 'sneaky', rootdomain: alice.fqdn.split('.').slice(1).join('.') }],
        ['subdomains.delete', { id: alice.id }],
        ['keys.list', {}],
        ['keys.create', {}],
        ['quota.get', {}],
        ['auth.verify', {}],
      ]
      for (const [method, input] of refused)
        expect([method, await acme(method, input)]).toEqual([method, { error: 'credential_scope_forbidden' }])
      // A record the owner made that is not a challenge cannot be changed or deleted by it.
      const a1 = (await owner('dns_records.create', {
        subdomain_id: alice.id,
        type: 'A',
        name: 'www',
        content: '8.8.8.8',
      })) as { ok: { dns_record: { id: number } } }
      expect(await acme('dns_records.delete', { subdomain_id: alice.id, id: a1.ok.dns_record.id })).toEqual({
        error: 'credential_scope_forbidden',
      })
      expect(
        await acme('dns_records.update', {
          subdomain_id: alice.id,
          id: a1.ok.dns_record.id,
          content: '1.1.1.1',
        }),
      ).toEqual({ error: 'credential_scope_forbidden' })

      // Another account's subdomain does not exist for it.
      const b = await createAccount(deps)
      const bob = await make(b, 'bob')
      expect(
        await acme('acme.present', { fqdn: `_acme-challenge.${bob.fqdn}.`, value: txtValue('b') }),
      ).toEqual({ error: 'subdomain_not_found' })
      expect(
        await acme('dns_records.create', {
          subdomain_id: bob.id,
          type: 'TXT',
          name: '_acme-challenge',
          content: 'x',
        }),
      ).toEqual({ error: 'subdomain_not_found' })

      // Its own deletions are allowed.
      expect(
        await acme('dns_records.delete', { subdomain_id: alice.id, id: rec.ok.dns_record.id }),
      ).toMatchObject({
        ok: { deleted: true },
      })
    },
  )

  it('when it names one subdomain, then the account’s other subdomains are refused with 403', async () => {
    const { app, a, alice, make } = await setup()
    const other = await make(a, 'other')
    const made = await request(app)
      .post('/rest/keys')
      .set(a.headers)
      .send({ scope: 'acme', subdomain_id: alice.id })
      .expect(201)
    expect(made.body.key).toMatchObject({ scope: 'acme', subdomain_id: alice.id })
    const auth = basic(made.body.key.api_key, made.body.key.api_secret)
    await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn: `_acme-challenge.${alice.fqdn}.`, value: txtValue('a') })
      .expect(200)
    const refused = await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn: `_acme-challenge.${other.fqdn}.`, value: txtValue('a') })
      .expect(403)
    expect(refused.body.error.code).toBe('credential_scope_forbidden')
    // It is listed among the keys with its scope, and can be revoked like any.
    const keys = await request(app).get('/rest/keys').set(a.headers).expect(200)
    expect(keys.body.keys).toEqual(
      expect.arrayContaining([expect.objectContaining({ scope: 'acme', subdomain_id: alice.id })]),
    )
    await request(app).delete(`/rest/keys/${made.body.key.id}`).set(a.headers).expect(200)
    await request(app)
      .post('/rest/acme/httpreq/present')
      .set('Authorization', auth)
      .send({ fqdn: `_acme-challenge.${alice.fqdn}.`, value: txtValue('b') })
      .expect(401)
  })

  it('when it calls /nic/update, then 403 badauth; and at most 5 per subdomain or account-wide, exact under concurrency', async () => {
    const { app, a, alice } = await setup()
    const made = await request(app).post('/rest/keys').set(a.headers).send({ scope: 'acme' }).expect(201)
    const nic = await request(app)
      .get('/nic/update')
      .query({ hostname: alice.fqdn, myip: '1.2.3.4' })
      .set('Authorization', basic(made.body.key.api_key, made.body.key.api_secret))
    expect([nic.status, nic.text]).toEqual([403, 'badauth\n'])

    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        request(app).post('/rest/keys').set(a.headers).send({ scope: 'acme', subdomain_id: alice.id }),
      ),
    )
    expect(answers.filter((r) => r.status === 201)).toHaveLength(5)
    expect(answers.filter((r) => r.status === 409).map((r) => r.body.error.code)).toEqual(
      Array(3).fill('key_limit_reached'),
    )
    // Account-wide ones have their own five (one made above).
    const wide = await Promise.all(
      Array.from({ length: 6 }, () => request(app).post('/rest/keys').set(a.headers).send({ scope: 'acme' })),
    )
    expect(wide.filter((r) => r.status === 201)).toHaveLength(4)
  })
})
