import { X509Certificate } from 'node:crypto'
import { request } from '@quartet/core/testing'
import { createAccount, type TestAccount, useDeps } from '../helpers.ts'
import { ACME_NEEDS, legoObtain, type Pebble, startPebble } from '../support/acme.ts'
import { dig, powerDnsApp, powerDnsDescribe, usePowerDns } from '../support/powerdns.ts'
import { listenOnLoopback } from '../support/programs.ts'

/**
 * A certificate for a subdomain and its wildcard, end to end with real programs and nothing
 * imitated: Debian's lego (the ACME client, its `httpreq` DNS provider pointed at dns-manager),
 * pebble (Let's Encrypt's ACME test server, validating DNS-01 against PowerDNS) and PowerDNS
 * (dns-manager's upstream).
 */
const deps = useDeps()
const describeWithPrograms = powerDnsDescribe({ also: ACME_NEEDS })

describeWithPrograms('certificates with lego, pebble and PowerDNS (DNS-01)', () => {
  const pdns = usePowerDns()
  let pebble: Pebble
  beforeAll(async () => {
    pebble = await startPebble(`127.0.0.1:${pdns.dnsPort}`)
  }, 60_000)
  afterAll(async () => {
    await pebble?.stop()
  })

  async function setup() {
    const { app, zone, a } = await powerDnsApp(deps, pdns, { prefix: 'le', timeoutMs: 2000 })
    const make = async (account: TestAccount, label: string) => {
      const s = await request(app)
        .post('/rest/subdomains')
        .set(account.headers)
        .send({ subdomain: label, rootdomain: zone })
        .expect(201)
      return { id: s.body.subdomain.id as number, fqdn: `${label}.${zone}` }
    }
    const alice = await make(a, 'alice')
    // A record of the holder's own, which the ACME flow must leave alone.
    await request(app)
      .post(`/rest/subdomains/${alice.id}/records`)
      .set(a.headers)
      .send({ type: 'TXT', name: '@', content: 'v=spf1 -all' })
      .expect(201)
    return { app, a, alice, make }
  }

  function sansOf(pem: string): string[] {
    const leaf = new X509Certificate(pem)
    return (leaf.subjectAltName ?? '')
      .split(', ')
      .map((s) => s.replace(/^DNS:/, ''))
      .sort()
  }

  async function auditOf(accountId: string) {
    return deps.db.auditLog.findMany({
      where: { accountId, operation: { startsWith: 'acme.' } },
      orderBy: { id: 'asc' },
    })
  }

  it('when lego obtains one certificate for alice.<zone> and *.alice.<zone> with the account’s key, then both names are in it and no _acme-challenge record is left', async () => {
    const { app, a, alice } = await setup()
    const server = await listenOnLoopback(app)
    try {
      const result = await legoObtain({
        pebble,
        endpoint: `http://127.0.0.1:${server.port}/rest/acme/httpreq`,
        username: a.apiKey,
        password: a.apiSecret,
        resolver: `127.0.0.1:${pdns.dnsPort}`,
        domains: [alice.fqdn, `*.${alice.fqdn}`],
      })
      expect({ status: result.status, certificate: !!result.certificate }).toEqual({
        status: 0,
        certificate: true,
      })
      expect(sansOf(result.certificate!)).toEqual([`*.${alice.fqdn}`, alice.fqdn].sort())
    } finally {
      await server.close()
    }
    // Both values were presented at the one name (wildcard and base name), then each removed.
    const audit = await auditOf(a.accountId)
    expect(audit.map((e) => [e.operation, e.outcome])).toEqual([
      ['acme.present', 'ok'],
      ['acme.present', 'ok'],
      ['acme.cleanup', 'ok'],
      ['acme.cleanup', 'ok'],
    ])
    expect(new Set(audit.map((e) => e.target)).size).toBe(2)
    expect(dig(pdns, `_acme-challenge.${alice.fqdn}`, 'TXT')).toEqual([])
    const left = await request(app)
      .get(`/rest/subdomains/${alice.id}/records`)
      .query({ type: 'TXT' })
      .set(a.headers)
      .expect(200)
    expect(left.body.dns_records.map((r: { name: string }) => r.name)).toEqual(['@'])
    expect(dig(pdns, alice.fqdn, 'TXT').map((x) => x.rdata)).toEqual(['"v=spf1 -all"'])
  }, 150_000)

  it('when lego uses an ACME-only credential (RAW mode), then it gets the certificate, and that credential can neither make an A record nor touch another account’s subdomain', async () => {
    const { app, a, alice, make } = await setup()
    const key = (
      await request(app)
        .post('/rest/keys')
        .set(a.headers)
        .send({ scope: 'acme', subdomain_id: alice.id })
        .expect(201)
    ).body.key as { api_key: string; api_secret: string }
    const server = await listenOnLoopback(app)
    try {
      const result = await legoObtain({
        pebble,
        endpoint: `http://127.0.0.1:${server.port}/api/v1/rest/acme/httpreq`,
        username: key.api_key,
        password: key.api_secret,
        resolver: `127.0.0.1:${pdns.dnsPort}`,
        domains: [`*.${alice.fqdn}`, alice.fqdn],
        mode: 'RAW',
      })
      expect({ status: result.status, certificate: !!result.certificate }).toEqual({
        status: 0,
        certificate: true,
      })
      expect(sansOf(result.certificate!)).toEqual([`*.${alice.fqdn}`, alice.fqdn].sort())
    } finally {
      await server.close()
    }
    expect(dig(pdns, `_acme-challenge.${alice.fqdn}`, 'TXT')).toEqual([])

    const acmeHeaders = { 'X-API-Key': key.api_key, 'X-API-Secret': key.api_secret }
    const aRecord = await request(app)
      .post(`/rest/subdomains/${alice.id}/records`)
      .set(acmeHeaders)
      .send({ type: 'A', name: 'www', content: '8.8.8.8' })
      .expect(403)
    expect(aRecord.body.error.code).toBe('credential_scope_forbidden')
    expect(dig(pdns, `www.${alice.fqdn}`, 'A')).toEqual([])

    const b = await createAccount(deps)
    const bob = await make(b, 'bob')
    const foreign = await request(app)
      .post('/rest/acme/httpreq/present')
      .set(acmeHeaders)
      .send({ fqdn: `_acme-challenge.${bob.fqdn}.`, value: 'x'.repeat(43) })
      .expect(404)
    expect(foreign.body.error.code).toBe('subdomain_not_found')
    const foreignRecord = await request(app)
      .post(`/rest/subdomains/${bob.id}/records`)
      .set(acmeHeaders)
      .send({ type: 'TXT', name: '_acme-challenge', content: 'x' })
      .expect(404)
    expect(foreignRecord.body.error.code).toBe('subdomain_not_found')
    expect(dig(pdns, `_acme-challenge.${bob.fqdn}`, 'TXT')).toEqual([])
  }, 150_000)
})
