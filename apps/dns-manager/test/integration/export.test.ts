import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describeWhen, findProgram, request } from '@quartet/core/testing'
import {
  addZone,
  buildApp,
  createAccount,
  type Express,
  type TestAccount,
  unique,
  useDeps,
} from '../helpers.ts'
import { describeWithPowerDns, dig, providerOn, usePowerDns } from '../support/powerdns.ts'

/** Zone exports load in BIND (`named-checkzone`, Debian bind9-utils); zones are created with their own SOA. */
const deps = useDeps()
const CHECKZONE = findProgram('named-checkzone')
const describeWithBind = (title: string, suite: () => void) =>
  describeWhen({ programs: [{ name: 'named-checkzone', debian: 'bind9-utils' }] }, title, suite)

/** `named-checkzone origin file`: its exit status and what it said. */
function checkzone(origin: string, text: string): { status: number | null; output: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'zone-'))
  try {
    const file = path.join(dir, 'zone')
    writeFileSync(file, text)
    const run = spawnSync(CHECKZONE!, ['-q', origin, file], { encoding: 'utf8' })
    const verbose = spawnSync(CHECKZONE!, [origin, file], { encoding: 'utf8' })
    return { status: run.status, output: `${verbose.stdout}${verbose.stderr}` }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function subdomain(app: Express, a: TestAccount, label: string, zone: string) {
  const res = await request(app)
    .post('/rest/subdomains')
    .set(a.headers)
    .send({ subdomain: label, rootdomain: zone })
  expect(res.status).toBe(201)
  return { id: res.body.subdomain.id as number, full: res.body.subdomain.full_domain as string }
}
const post = (app: Express, a: TestAccount, id: number, body: object) =>
  request(app).post(`/rest/subdomains/${id}/records`).set(a.headers).send(body).expect(201)

describeWithBind('zone exports load in BIND', () => {
  it('when a subdomain holds every kind of record, awkward TXT included, then named-checkzone loads its export', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const zone = `${unique('ex')}.test`
    await addZone(deps, zone)
    const s = await subdomain(app, a, 'host', zone)
    for (const body of [
      { type: 'A', content: '8.8.8.8' },
      { type: 'AAAA', name: 'v6', content: '2606:4700::1111' },
      { type: 'TXT', content: 'line1\nline2\ttab "quoted" back\\slash \u0001 ünïcode' },
      { type: 'TXT', name: 'long', content: 'x'.repeat(700) },
      { type: 'TXT', name: 'empty', content: '' },
      { type: 'TXT', name: '_', content: 'underscore' },
      { type: 'MX', content: 'mx.example.com', priority: 10 },
      { type: 'MX', name: 'nomail', content: '.', priority: 0 },
      { type: 'SRV', name: '_sip._tcp', content: 'sip.example.com', priority: 1, weight: 2, port: 5060 },
      { type: 'SRV', name: '_none._tcp', content: '.', priority: 0, weight: 0, port: 0 },
      { type: 'CAA', content: 'letsencrypt.org; validationmethods=dns-01', tag: 'issue' },
      { type: 'CAA', content: 'mailto:sec@example.com', tag: 'iodef' },
      { type: 'CNAME', name: 'www', content: 'target.example.com' },
      { type: 'A', name: 'ns.d', content: '8.8.4.4' },
      { type: 'NS', name: 'd', content: `ns.d.${s.full}` },
      { type: 'A', name: '*.dev', content: '1.1.1.1' },
    ])
      await post(app, a, s.id, body)
    const res = await request(app)
      .get(`/rest/subdomains/${s.id}/zone`)
      .set(a.headers)
      .buffer(true)
      .parse((r, done) => {
        const chunks: Buffer[] = []
        r.on('data', (c: Buffer) => chunks.push(c))
        r.on('end', () => done(null, Buffer.concat(chunks).toString('utf8')))
      })
      .expect(200)
    expect(res.headers['content-type']).toMatch(/^text\/dns; charset=utf-8/)
    const text = res.body as string
    expect(text).toContain('@ 600 IN TXT "line1\\010line2\\009tab \\"quoted\\" back\\\\slash \\001 ünïcode"')
    const result = checkzone(s.full, text)
    expect(result).toMatchObject({ status: 0 })
    expect(result.output).toContain('loaded serial')
  })

  it('when the subdomain itself is a CNAME, then it is exported within its root zone, which named-checkzone loads', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const zone = `${unique('ex')}.test`
    await addZone(deps, zone)
    const s = await subdomain(app, a, 'alias', zone)
    await post(app, a, s.id, { type: 'CNAME', name: '@', content: 'target.example.com' })
    await post(app, a, s.id, { type: 'A', name: 'www', content: '8.8.8.8' })
    const rpc = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', id: 1, method: 'subdomains.zone', params: { id: s.id } })
      .expect(200)
    const { zone: text, origin } = rpc.body.result
    expect(origin).toBe(zone)
    expect(text).toContain(`$ORIGIN ${zone}.`)
    expect(text).toContain('alias 600 IN CNAME target.example.com.')
    expect(text).toContain('www.alias 600 IN A 8.8.8.8')
    expect(checkzone(origin, text).status).toBe(0)
    // The form of every other subdomain does not load with an apex CNAME: why this one differs.
    const naive = text
      .replace(`$ORIGIN ${zone}.`, `$ORIGIN ${s.full}.`)
      .replace('alias 600 IN CNAME', '@ 600 IN CNAME')
    expect(checkzone(s.full, naive.replace(/www\.alias/, 'www')).status).not.toBe(0)
  })

  it('when a subdomain delegates itself (NS at @), then its export has its own NS as the zone’s and loads', async () => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const zone = `${unique('ex')}.test`
    await addZone(deps, zone)
    const s = await subdomain(app, a, 'deleg', zone)
    await post(app, a, s.id, { type: 'NS', content: 'ns1.elsewhere.example' })
    await post(app, a, s.id, { type: 'NS', content: 'ns2.elsewhere.example' })
    const res = await request(app).get(`/rest/subdomains/${s.id}/zone`).set(a.headers).expect(200)
    expect(res.text).toContain(`@ 600 IN SOA ns1.elsewhere.example. hostmaster.${s.full}.`)
    expect(res.text).not.toContain('ns1.example.net')
    expect(checkzone(s.full, res.text).status).toBe(0)
  })
})

describeWithPowerDns('zones created at PowerDNS (cli zones:add)', () => {
  const pdns = usePowerDns()

  it('when a zone is created, then it serves its own SOA and the NS of the settings; a zone with the placeholder SOA is repaired', async () => {
    const provider = providerOn(pdns, 2000)
    const zone = `${unique('za')}.test`
    expect(await provider.ensureZone!(zone, ['ns1.example.net', 'ns2.example.net'])).toBe('created')
    const [soa] = dig(pdns, zone, 'SOA')
    expect(soa!.rdata).toMatch(
      new RegExp(
        `^ns1\\.example\\.net\\. hostmaster\\.${zone.replace('.', '\\.')}\\. \\d+ 10800 3600 604800 3600$`,
      ),
    )
    expect(dig(pdns, zone, 'NS').map((x) => x.rdata)).toEqual(['ns1.example.net.', 'ns2.example.net.'])

    // Made elsewhere without an SOA: PowerDNS fills in a placeholder MNAME.
    const bare = `${unique('zb')}.test`
    await fetch(`${pdns.apiUrl}/api/v1/servers/localhost/zones`, {
      method: 'POST',
      headers: { 'X-API-Key': pdns.apiKey },
      body: JSON.stringify({ name: `${bare}.`, kind: 'Native', nameservers: ['ns1.example.net.'] }),
    })
    expect(dig(pdns, bare, 'SOA')[0]!.rdata).toMatch(/^a\.misconfigured\.dns\.server\.invalid\. /)
    expect(await provider.ensureZone!(bare, ['ns1.example.net'])).toBe('exists')
    expect(dig(pdns, bare, 'SOA')[0]!.rdata).toMatch(/^ns1\.example\.net\. /)
  })
})
