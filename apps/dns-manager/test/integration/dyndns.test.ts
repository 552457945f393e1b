import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describeWhen, findProgram, request } from '@quartet/core/testing'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { createAccount, type TestAccount, useDeps } from '../helpers.ts'
import { describeWithPowerDns, dig, powerDnsApp, usePowerDns } from '../support/powerdns.ts'
import { listenOnLoopback, run as runProgram } from '../support/programs.ts'

/** Dynamic DNS (dyndns2 /nic/update) against a real PowerDNS, with Debian's ddclient and inadyn. */
const deps = useDeps()
const DDCLIENT = findProgram('ddclient')
const INADYN = findProgram('inadyn')

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`

describeWithPowerDns('dynamic DNS (dyndns2)', () => {
  const pdns = usePowerDns()

  async function setup() {
    let changes = 0
    const built = await powerDnsApp(deps, pdns, {
      prefix: 'dy',
      timeoutMs: 1000,
      env: { PROVIDER_TIMEOUT_MS: '1000' },
      wrap: (real): DnsProvider => ({
        ...real,
        kind: real.kind,
        applyRRsets: (zone, rrsets) => {
          changes++
          return real.applyRRsets(zone, rrsets)
        },
      }),
    })
    const { zone, a } = built
    const make = async (account: TestAccount, label: string) => {
      const s = await request(built.app)
        .post('/rest/subdomains')
        .set(account.headers)
        .send({ subdomain: label, rootdomain: zone })
        .expect(201)
      return { id: s.body.subdomain.id as number, fqdn: `${label}.${zone}` }
    }
    const home = await make(a, 'home')
    return { ...built, home, make, changes: () => changes }
  }

  const served = (name: string, type: string) => dig(pdns, name, type).map((x) => x.rdata)

  it('when a client updates with the account’s key, then good, DNS serves it, and a repeat is nochg without touching the upstream', async () => {
    const { app, a, home, changes } = await setup()
    const auth = basic(a.apiKey, a.apiSecret)
    const first = await request(app)
      .get('/nic/update')
      .query({ hostname: home.fqdn, myip: '1.2.8.1' })
      .set('Authorization', auth)
    expect(first.status).toBe(200)
    expect(first.headers['content-type']).toMatch(/^text\/plain/)
    expect(first.headers['cache-control']).toBe('no-store')
    expect(first.text).toBe('good 1.2.8.1\n')
    expect(served(home.fqdn, 'A')).toEqual(['1.2.8.1'])
    expect(dig(pdns, home.fqdn, 'A')[0]!.ttl).toBe(60)

    const before = changes()
    const again = await request(app)
      .get('/nic/update')
      .query({ hostname: home.fqdn, myip: '1.2.8.1' })
      .set('Authorization', auth)
    expect(again.text).toBe('nochg 1.2.8.1\n')
    expect(changes()).toBe(before)

    // v4 and v6 in myip; then myipv6 alone leaves A as it is; /api/v1 works too.
    const both = await request(app)
      .get('/api/v1/nic/update')
      .query({ hostname: home.fqdn, myip: '1.2.8.2,2606:4700::1234' })
      .set('Authorization', auth)
    expect(both.text).toBe('good 1.2.8.2,2606:4700::1234\n')
    expect(served(home.fqdn, 'A')).toEqual(['1.2.8.2'])
    expect(served(home.fqdn, 'AAAA')).toEqual(['2606:4700::1234'])
    await request(app)
      .get('/nic/update')
      .query({ hostname: home.fqdn, myipv6: '2606:4700::99' })
      .set('Authorization', auth)
    expect(served(home.fqdn, 'A')).toEqual(['1.2.8.2'])
    expect(served(home.fqdn, 'AAAA')).toEqual(['2606:4700::99'])

    // No address given: the caller's (X-Forwarded-For is believed from loopback, TRUST_PROXY).
    const caller = await request(app)
      .get('/nic/update')
      .query({ hostname: `www.${home.fqdn}` })
      .set('Authorization', auth)
      .set('X-Forwarded-For', '1.2.8.3')
    expect(caller.text).toBe('good 1.2.8.3\n')
    expect(served(`www.${home.fqdn}`, 'A')).toEqual(['1.2.8.3'])
    const list = await request(app).get(`/rest/subdomains/${home.id}/records`).set(a.headers).expect(200)
    expect(
      list.body.dns_records
        .map((r: { name: string; type: string; content: string }) => `${r.name} ${r.type} ${r.content}`)
        .sort(),
    ).toEqual(['@ A 1.2.8.2', '@ AAAA 2606:4700::99', 'www A 1.2.8.3'].sort())
  })

  it('when the request is wrong, then the protocol’s codes with the status codes clients act on', async () => {
    const { app, a, home, make } = await setup()
    const b = await createAccount(deps)
    const others = await make(b, 'other')
    const auth = basic(a.apiKey, a.apiSecret)
    const get = (query: Record<string, string>, authorization = auth) =>
      request(app).get('/nic/update').query(query).set('Authorization', authorization)

    const none = await request(app).get('/nic/update').query({ hostname: home.fqdn, myip: '1.2.8.1' })
    expect([none.status, none.text, none.headers['www-authenticate']]).toEqual([
      401,
      'badauth\n',
      'Basic realm="dns-manager", charset="UTF-8"',
    ])
    const wrong = await get({ hostname: home.fqdn, myip: '1.2.8.1' }, basic(a.apiKey, 'f'.repeat(64)))
    expect([wrong.status, wrong.text]).toEqual([401, 'badauth\n'])
    expect((await get({ hostname: 'nodots', myip: '1.2.8.1' })).text).toBe('notfqdn\n')
    expect((await get({ myip: '1.2.8.1' })).text).toBe('notfqdn\n')
    expect(
      (await get({ hostname: `nobody.${home.fqdn.split('.').slice(1).join('.')}`, myip: '1.2.8.1' })).text,
    ).toBe('nohost\n')
    // Another account's subdomain is nohost too.
    expect((await get({ hostname: others.fqdn, myip: '1.2.8.1' })).text).toBe('nohost\n')
    const many = Array.from({ length: 21 }, () => home.fqdn).join(',')
    expect((await get({ hostname: many, myip: '1.2.8.1' })).text).toBe('numhost\n')
    const badip = await get({ hostname: home.fqdn, myip: '10.0.0.1' })
    expect(badip.status).toBe(400)
    expect(badip.text).toMatch(/^badip /)
    // One line per host name, in order.
    const two = await get({ hostname: `${home.fqdn},${others.fqdn}`, myip: '1.2.8.1' })
    expect(two.text).toBe('good 1.2.8.1\nnohost\n')

    // The upstream frozen: 911, 503 with Retry-After; nothing changed.
    pdns.freeze()
    const frozen = await get({ hostname: home.fqdn, myip: '1.2.8.9' })
    pdns.thaw()
    expect([frozen.status, frozen.text, frozen.headers['retry-after']]).toEqual([503, '911\n', '30'])
  })

  it('when an update-only credential is made (REST, JSON-RPC, GraphQL), then it updates its subdomain only and opens nothing else', async () => {
    const { app, a, home, make } = await setup()
    const second = await make(a, 'second')
    const rest = await request(app)
      .post('/rest/keys')
      .set(a.headers)
      .send({ scope: 'dyndns', subdomain_id: home.id })
      .expect(201)
    expect(rest.body.key).toMatchObject({ scope: 'dyndns', subdomain_id: home.id })
    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({
        jsonrpc: '2.0',
        id: 1,
        method: 'keys.create',
        params: { scope: 'dyndns', subdomain_id: home.id },
      })
      .expect(200)
    expect(rpc.body.result.key).toMatchObject({ scope: 'dyndns', subdomain_id: home.id })
    const gql = await request(app)
      .post('/graphql')
      .set(a.headers)
      .send({
        query: `mutation { createApiKey(scope: "dyndns", subdomain_id: ${home.id}) { key { api_key api_secret scope subdomain_id } } }`,
      })
      .expect(200)
    expect(gql.body.data.createApiKey.key).toMatchObject({ scope: 'dyndns', subdomain_id: home.id })
    const missing = await request(app).post('/rest/keys').set(a.headers).send({ scope: 'dyndns' }).expect(400)
    expect(missing.body.error.details.field).toBe('subdomain_id')
    // Scoped keys are not among the account's MAX_API_KEYS.
    await request(app).post('/rest/keys').set(a.headers).send({}).expect(201)

    for (const key of [rest.body.key, rpc.body.result.key, gql.body.data.createApiKey.key]) {
      const auth = basic(key.api_key, key.api_secret)
      const ok = await request(app)
        .get('/nic/update')
        .query({ hostname: home.fqdn, myip: '1.2.8.5' })
        .set('Authorization', auth)
      expect(ok.status).toBe(200)
      expect(ok.text).toMatch(/^(good|nochg) 1\.2\.8\.5\n$/)
      const elsewhere = await request(app)
        .get('/nic/update')
        .query({ hostname: second.fqdn, myip: '1.2.8.5' })
        .set('Authorization', auth)
      expect(elsewhere.text).toBe('nohost\n')
      const api = await request(app)
        .get('/rest/quota')
        .set({ 'X-API-Key': key.api_key, 'X-API-Secret': key.api_secret })
      expect(api.status).toBe(401)
      expect(api.body.error.message).toMatch(/update-only/)
    }
    expect(served(home.fqdn, 'A')).toEqual(['1.2.8.5'])
    const keys = await request(app).get('/rest/keys').set(a.headers).expect(200)
    expect(keys.body.keys.filter((k: { scope: string }) => k.scope === 'dyndns')).toHaveLength(3)
  })

  const clients = {
    programs: [
      { name: 'ddclient', debian: 'ddclient' },
      { name: 'inadyn', debian: 'inadyn' },
    ],
  }
  describeWhen(clients, 'with the clients people run', () => {
    it('when Debian’s ddclient updates with dyndns2 against dns-manager, then dig serves its address', async () => {
      const { app, a, home } = await setup()
      const server = await listenOnLoopback(app)
      const dir = mkdtempSync(path.join(tmpdir(), 'ddclient-'))
      try {
        const conf = path.join(dir, 'ddclient.conf')
        writeFileSync(
          conf,
          [
            'daemon=0',
            'syslog=no',
            'ssl=no',
            // ddclient 3.10 (Debian 12) reads a fixed address from use=ip; its usev4 is not wired up yet.
            'use=ip, ip=1.2.8.6',
            'protocol=dyndns2',
            `server=127.0.0.1:${server.port}`,
            `login=${a.apiKey}`,
            `password='${a.apiSecret}'`,
            home.fqdn,
            '',
          ].join('\n'),
        )
        chmodSync(conf, 0o600)
        // Once, in the foreground (-foreground would keep it waiting for the next round).
        const result = await runProgram(DDCLIENT!, [
          '-daemon=0',
          '-force',
          '-verbose',
          '-noquiet',
          '-file',
          conf,
          '-cache',
          path.join(dir, 'cache'),
        ])
        expect(result.output).toMatch(/SUCCESS: +updating .*: good: IP address set to 1\.2\.8\.6/)
        expect(result.status).toBe(0)
        expect(served(home.fqdn, 'A')).toEqual(['1.2.8.6'])
      } finally {
        await server.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }, 90_000)

    it('when Debian’s inadyn updates with a custom dyndns2 provider against dns-manager, then dig serves its address', async () => {
      const { app, a, home } = await setup()
      const key = (
        await request(app)
          .post('/rest/keys')
          .set(a.headers)
          .send({ scope: 'dyndns', subdomain_id: home.id })
          .expect(201)
      ).body.key
      const server = await listenOnLoopback(app)
      const dir = mkdtempSync(path.join(tmpdir(), 'inadyn-'))
      try {
        const conf = path.join(dir, 'inadyn.conf')
        writeFileSync(
          conf,
          [
            'period = 60',
            'custom dnsmanager {',
            `    username = "${key.api_key}"`,
            `    password = "${key.api_secret}"`,
            `    ddns-server = "127.0.0.1:${server.port}"`,
            '    ddns-path = "/nic/update?hostname=%h&myip=%i"',
            '    ssl = false',
            `    hostname = "${home.fqdn}"`,
            '}',
            '',
          ].join('\n'),
        )
        chmodSync(conf, 0o600)
        const result = await runProgram(INADYN!, [
          '--once',
          '--foreground',
          '--force',
          '--no-pidfile',
          '-l',
          'debug',
          '-f',
          conf,
          '--cache-dir',
          dir,
          '-c',
          'echo 1.2.8.7',
        ])
        expect(result.output).toMatch(/good/)
        expect(result.status).toBe(0)
        expect(served(home.fqdn, 'A')).toEqual(['1.2.8.7'])
      } finally {
        await server.close()
        rmSync(dir, { recursive: true, force: true })
      }
    }, 90_000)
  })
})
