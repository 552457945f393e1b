import { promises as dns } from 'node:dns'
import { request } from '@quartet/core/testing'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'
import { type PowerDns, powerDnsDescribe, providerOn, usePowerDns } from '../support/powerdns.ts'

const deps = useDeps()
// Without PowerDNS this fails under CI (which installs it) and is skipped elsewhere.
const describeWithPdns = powerDnsDescribe({ dig: false })

async function lookup(pdns: PowerDns, name: string, type: 'A' | 'AAAA' | 'TXT' | 'MX'): Promise<unknown> {
  const resolver = new dns.Resolver({ timeout: 2000, tries: 1 })
  resolver.setServers([`127.0.0.1:${pdns.dnsPort}`])
  try {
    switch (type) {
      case 'A':
        return (await resolver.resolve4(name)).sort()
      case 'AAAA':
        return await resolver.resolve6(name)
      case 'TXT':
        return await resolver.resolveTxt(name)
      case 'MX':
        // Node 24's resolver adds `type: 'MX'` to each record; Node 20's does not.
        return (await resolver.resolveMx(name)).map(({ exchange, priority }) => ({ exchange, priority }))
    }
  } catch (err) {
    return (err as { code?: string }).code
  }
}

describeWithPdns('against a real PowerDNS (Authoritative HTTP API, gsqlite3)', () => {
  const pdns = usePowerDns()

  const app = (apiKey = pdns.apiKey, apiUrl = pdns.apiUrl) =>
    buildApp(deps, {
      env: {
        DNS_PROVIDER: 'powerdns',
        PDNS_API_URL: apiUrl,
        PDNS_API_KEY: apiKey,
        PROVIDER_TIMEOUT_MS: '2000',
      },
    }).app

  async function setup() {
    const zone = `${unique('pd')}.test`
    const provider = providerOn(pdns, 2000)
    expect(await provider.ensureZone!(zone, ['ns1.example.net'])).toBe('created')
    expect(await provider.ensureZone!(zone, ['ns1.example.net'])).toBe('exists')
    await addZone(deps, zone)
    const a = await createAccount(deps)
    return { zone, a }
  }

  it('when a subdomain and records are created through the API, then PowerDNS answers them; deleted, NXDOMAIN/NODATA', async () => {
    const { zone, a } = await setup()
    const api = app()
    const s = await request(api)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'web', rootdomain: zone })
      .expect(201)
    const id = s.body.subdomain.id
    const fqdn = `web.${zone}`
    const post = (body: object) =>
      request(api).post(`/rest/subdomains/${id}/records`).set(a.headers).send(body).expect(201)
    const a1 = await post({ type: 'A', name: '@', content: '8.8.8.8' })
    await post({ type: 'A', name: '@', content: '8.8.4.4' })
    await post({ type: 'AAAA', name: 'www', content: '2606:4700:4700::1111' })
    await post({ type: 'MX', name: '@', content: 'mx.example.com', priority: 10 })
    await post({ type: 'TXT', name: '_acme', content: 'x'.repeat(300) })

    expect(await lookup(pdns, fqdn, 'A')).toEqual(['8.8.4.4', '8.8.8.8'])
    expect(await lookup(pdns, `www.${fqdn}`, 'AAAA')).toEqual(['2606:4700:4700::1111'])
    expect(await lookup(pdns, fqdn, 'MX')).toEqual([{ exchange: 'mx.example.com', priority: 10 }])
    expect(await lookup(pdns, `_acme.${fqdn}`, 'TXT')).toEqual([['x'.repeat(255), 'x'.repeat(45)]])

    // An update moves the answer.
    await request(api)
      .patch(`/rest/subdomains/${id}/records/${a1.body.dns_record.id}`)
      .set(a.headers)
      .send({ content: '1.1.1.1' })
      .expect(200)
    expect(await lookup(pdns, fqdn, 'A')).toEqual(['1.1.1.1', '8.8.4.4'])

    // Deleting one record of the RRset keeps the other; deleting the name's last A gives NODATA.
    await request(api)
      .delete(`/rest/subdomains/${id}/records/${a1.body.dns_record.id}`)
      .set(a.headers)
      .expect(200)
    expect(await lookup(pdns, fqdn, 'A')).toEqual(['8.8.4.4'])
    const www = (
      await request(api).get(`/rest/subdomains/${id}/records`).query({ name: 'www' }).set(a.headers)
    ).body.dns_records[0]
    await request(api).delete(`/rest/subdomains/${id}/records/${www.id}`).set(a.headers).expect(200)
    expect(await lookup(pdns, `www.${fqdn}`, 'AAAA')).toMatch(/^(ENOTFOUND|ENODATA)$/)

    // Releasing the subdomain removes everything upstream.
    await request(api).delete(`/rest/subdomains/${id}`).set(a.headers).expect(200)
    expect(await lookup(pdns, fqdn, 'A')).toBe('ENOTFOUND')
    expect(await lookup(pdns, `_acme.${fqdn}`, 'TXT')).toBe('ENOTFOUND')
  })

  it('when PowerDNS refuses the change (wrong API key), then 502 provider_operation_failed and nothing is written', async () => {
    const { zone, a } = await setup()
    const good = app()
    const s = await request(good)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'refuse', rootdomain: zone })
      .expect(201)
    const id = s.body.subdomain.id
    const kept = await request(good)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'A', content: '8.8.8.8' })
      .expect(201)

    const refusing = app('wrong-key')
    const res = await request(refusing)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'A', content: '9.9.9.9' })
      .expect(502)
    expect(res.body.error).toEqual({ code: 'provider_operation_failed', message: 'bad gateway' })
    await request(refusing)
      .patch(`/rest/subdomains/${id}/records/${kept.body.dns_record.id}`)
      .set(a.headers)
      .send({ content: '4.4.4.4' })
      .expect(502)
    await request(refusing)
      .delete(`/rest/subdomains/${id}/records/${kept.body.dns_record.id}`)
      .set(a.headers)
      .expect(502)
    await request(refusing).delete(`/rest/subdomains/${id}`).set(a.headers).expect(502)

    const rows = await deps.database.query('SELECT content, state FROM dns_record WHERE subdomain_id = $1', [
      id,
    ])
    expect(rows.rows).toEqual([{ content: '8.8.8.8', state: 'active' }])
    expect(await lookup(pdns, `refuse.${zone}`, 'A')).toEqual(['8.8.8.8'])
    const audit = await deps.database.query<{ outcome: string }>(
      "SELECT outcome FROM audit_log WHERE account_id = $1 AND outcome <> 'ok'",
      [a.accountId],
    )
    expect(audit.rows.map((r) => r.outcome)).toEqual(Array(4).fill('provider_operation_failed'))
  })

  it('when PowerDNS is unreachable, then 502 provider_operation_failed and nothing is written', async () => {
    const { zone, a } = await setup()
    const s = await request(app())
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'down', rootdomain: zone })
      .expect(201)
    // A loopback port nobody listens on.
    const down = app(pdns.apiKey, 'http://127.0.0.1:9')
    const res = await request(down)
      .post(`/rest/subdomains/${s.body.subdomain.id}/records`)
      .set(a.headers)
      .send({ type: 'A', content: '8.8.8.8' })
      .expect(502)
    expect(res.body.error.code).toBe('provider_operation_failed')
    const rows = await deps.database.query('SELECT 1 FROM dns_record WHERE subdomain_id = $1', [
      s.body.subdomain.id,
    ])
    expect(rows.rowCount).toBe(0)
    expect(await lookup(pdns, `down.${zone}`, 'A')).toBe('ENOTFOUND')
  })

  it('when a subdomain is past its grace period, then the sweeper removes its records from PowerDNS and releases it', async () => {
    const { zone, a } = await setup()
    const { app: api, useCases } = buildApp(deps, {
      env: { DNS_PROVIDER: 'powerdns', PDNS_API_URL: pdns.apiUrl, PDNS_API_KEY: pdns.apiKey },
    })
    const s = await request(api)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'old', rootdomain: zone })
      .expect(201)
    await request(api)
      .post(`/rest/subdomains/${s.body.subdomain.id}/records`)
      .set(a.headers)
      .send({ type: 'A', content: '8.8.8.8' })
      .expect(201)
    expect(await lookup(pdns, `old.${zone}`, 'A')).toEqual(['8.8.8.8'])
    await deps.database.query("UPDATE subdomain SET expires_at = now() - interval '46 days' WHERE id = $1", [
      s.body.subdomain.id,
    ])
    const swept = await useCases.sweepExpired()
    expect(swept.released).toContain(`old.${zone}`)
    expect(await lookup(pdns, `old.${zone}`, 'A')).toBe('ENOTFOUND')
    await request(api).get(`/rest/subdomains/${s.body.subdomain.id}`).set(a.headers).expect(404)
  })
})
