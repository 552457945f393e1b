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

/** Record validation per RFC (issue 22, item 6): the README's accepted and refused tables. */
const deps = useDeps()

async function subdomain(app: Express, a: TestAccount, zone?: string) {
  const root = zone ?? `${unique('va')}.test`
  if (!zone) await addZone(deps, root)
  const res = await request(app)
    .post('/rest/subdomains')
    .set(a.headers)
    .send({ subdomain: 'host', rootdomain: root })
  expect(res.status).toBe(201)
  return { id: res.body.subdomain.id as number, full: res.body.subdomain.full_domain as string }
}
const post = (app: Express, a: TestAccount, id: number, body: object) =>
  request(app).post(`/rest/subdomains/${id}/records`).set(a.headers).send(body)

type Body = Record<string, unknown>

const accepted: Array<[string, Body, Partial<Record<string, unknown>>]> = [
  ['a null MX (RFC 7505)', { type: 'MX', name: 'nomail', content: '.', priority: 0 }, { content: '.' }],
  [
    'an SRV with target "." and port 0 (RFC 2782)',
    { type: 'SRV', name: '_x._tcp', content: '.', priority: 0, weight: 0, port: 0 },
    { content: '.', port: 0 },
  ],
  [
    'an SRV on port 0 of a host',
    { type: 'SRV', name: '_y._udp', content: 'sip.example.com', priority: 1, weight: 1, port: 0 },
    { port: 0 },
  ],
  ['an empty TXT', { type: 'TXT', name: 'empty', content: '' }, { content: '' }],
  ['the label _', { type: 'TXT', name: '_', content: 'x' }, { name: '_' }],
  ['the label x_', { type: 'TXT', name: 'x_', content: 'x' }, { name: 'x_' }],
  ['an IDN owner name', { type: 'A', name: 'Bücher', content: '8.8.8.8' }, { name: 'xn--bcher-kva' }],
  [
    'an IDN MX target',
    { type: 'MX', content: 'mx.münchen.example', priority: 5 },
    { content: 'mx.xn--mnchen-3ya.example' },
  ],
  [
    'a CNAME to an underscore name',
    { type: 'CNAME', name: '_acme-challenge', content: '_acme-challenge.example.net.' },
    { content: '_acme-challenge.example.net' },
  ],
  ['CAA issue ";" (no CA)', { type: 'CAA', content: ';', tag: 'issuewild' }, { content: ';' }],
  [
    'CAA issue with parameters',
    { type: 'CAA', content: 'letsencrypt.org; validationmethods=dns-01', tag: 'ISSUE' },
    { tag: 'issue' },
  ],
  [
    'CAA iodef mailto:',
    { type: 'CAA', content: 'mailto:security@example.com', tag: 'iodef', flag: 128 },
    { flag: 128 },
  ],
  [
    'a full name without its trailing dot',
    { type: 'A', name: 'www.host.<zone>', content: '8.8.4.4' },
    { name: 'www' },
  ],
]

const refused: Array<[string, Body[], Body, string]> = [
  ['an IPv4 address as MX target', [], { type: 'MX', content: '1.2.3.4', priority: 1 }, 'content'],
  ['an IPv6 address as MX target', [], { type: 'MX', content: '2001:4860::1', priority: 1 }, 'content'],
  [
    'an address as SRV target',
    [],
    { type: 'SRV', name: '_x._tcp', content: '1.2.3.4', priority: 1, weight: 1, port: 1 },
    'content',
  ],
  ['an address as NS target', [], { type: 'NS', name: 'd', content: '1.2.3.4' }, 'content'],
  ['an address as CNAME target', [], { type: 'CNAME', name: 'c', content: '1.2.3.4.' }, 'content'],
  ['an all-numeric top-level label', [], { type: 'MX', content: 'mail.example.123', priority: 1 }, 'content'],
  [
    'an MX at one of the subdomain’s CNAMEs',
    [{ type: 'CNAME', name: 'alias', content: 'elsewhere.example.com' }],
    { type: 'MX', content: 'alias.host.<zone>', priority: 1 },
    'content',
  ],
  [
    'an NS at one of the subdomain’s CNAMEs',
    [{ type: 'CNAME', name: 'alias', content: 'elsewhere.example.com' }],
    { type: 'NS', name: 'd', content: 'alias.host.<zone>' },
    'content',
  ],
  [
    'a CNAME at a name an MX points to',
    [{ type: 'MX', content: 'mx.host.<zone>', priority: 1 }],
    { type: 'CNAME', name: 'mx', content: 'elsewhere.example.com' },
    'name',
  ],
  ['a null MX with priority 10', [], { type: 'MX', content: '.', priority: 10 }, 'priority'],
  [
    'a null MX beside another MX',
    [{ type: 'MX', content: 'mx.example.com', priority: 1 }],
    { type: 'MX', content: '.', priority: 0 },
    'content',
  ],
  [
    'an MX beside a null MX',
    [{ type: 'MX', content: '.', priority: 0 }],
    { type: 'MX', content: 'mx.example.com', priority: 1 },
    'content',
  ],
  [
    'a CAA issue value that is no domain',
    [],
    { type: 'CAA', content: 'not a domain!', tag: 'issue' },
    'content',
  ],
  [
    'a CAA issue value that is a URL',
    [],
    { type: 'CAA', content: 'https://ca.example', tag: 'issue' },
    'content',
  ],
  [
    'a CAA iodef value that is no mailto/http(s) URL',
    [],
    { type: 'CAA', content: 'ftp://x.example', tag: 'iodef' },
    'content',
  ],
  [
    'a CAA flag with a reserved bit',
    [],
    { type: 'CAA', content: 'letsencrypt.org', tag: 'issue', flag: 1 },
    'flag',
  ],
  ['the label xn--zz (bad punycode)', [], { type: 'A', name: 'xn--zz', content: '8.8.8.8' }, 'name'],
  ['a symbol as label (IDNA2008)', [], { type: 'A', name: '☃', content: '8.8.8.8' }, 'name'],
  ['an emoji label in a target', [], { type: 'MX', content: 'mx.💩.example', priority: 1 }, 'content'],
  ['a reserved "ab--" label', [], { type: 'A', name: 'ab--cd', content: '8.8.8.8' }, 'name'],
  ['an AAAA with a zone index', [], { type: 'AAAA', content: '2606:4700::1111%eth0' }, 'content'],
  ['an A with a zone index', [], { type: 'A', content: '8.8.8.8%1' }, 'content'],
]

describe('records accepted per RFC', () => {
  it.each(accepted)('when %s is written, then it is stored as given', async (_what, body, stored) => {
    const { app } = buildApp(deps)
    const a = await createAccount(deps)
    const s = await subdomain(app, a)
    const zone = s.full.slice('host.'.length)
    const send = JSON.parse(JSON.stringify(body).replaceAll('<zone>', zone)) as Body
    const res = await post(app, a, s.id, send)
    expect(res.status).toBe(201)
    expect(res.body.dns_record).toMatchObject(stored)
  })
})

const gqlCreate = `mutation($s: Int!, $t: String!, $c: String!, $n: String, $p: Int, $w: Int, $port: Int, $f: Int, $tag: String) {
  createDnsRecord(subdomain_id: $s, type: $t, content: $c, name: $n, priority: $p, weight: $w, port: $port, flag: $f, tag: $tag) { dns_record { id } }
}`

describe('records refused per RFC, in the three API styles', () => {
  it.each(refused)(
    'when %s is written, then 400 bad_request names the field',
    async (_what, before, body, field) => {
      const { app } = buildApp(deps)
      const a = await createAccount(deps)
      const s = await subdomain(app, a)
      const zone = s.full.slice('host.'.length)
      const fill = (b: Body) => JSON.parse(JSON.stringify(b).replaceAll('<zone>', zone)) as Body
      for (const b of before) await post(app, a, s.id, fill(b)).expect(201)
      const send = fill(body)

      const rest = await post(app, a, s.id, send)
      expect(rest.status).toBe(400)
      expect(rest.body.error).toMatchObject({ code: 'bad_request', details: { field } })
      expect(rest.body.error.message).toMatch(new RegExp(`^${field}: `))

      const rpc = await request(app)
        .post('/rpc')
        .set(a.headers)
        .send({
          jsonrpc: '2.0',
          id: 1,
          method: 'dns_records.create',
          params: { subdomain_id: s.id, ...send },
        })
      expect(rpc.body.error).toMatchObject({
        code: -32602,
        data: { error_code: 'bad_request', details: { field } },
      })

      const gql = await request(app)
        .post('/graphql')
        .set(a.headers)
        .send({
          query: gqlCreate,
          variables: {
            s: s.id,
            t: send.type,
            c: send.content,
            n: send.name,
            p: send.priority,
            w: send.weight,
            port: send.port,
            f: send.flag,
            tag: send.tag,
          },
        })
      // A field error beside data (null): 200, as GraphQL over HTTP has it (issue 43).
      expect(gql.status).toBe(200)
      expect(gql.body.errors[0].extensions).toMatchObject({ code: 'bad_request', details: { field } })

      const list = await request(app).get(`/rest/subdomains/${s.id}/records`).set(a.headers).expect(200)
      expect(list.body.dns_records).toHaveLength(before.length)
    },
  )

  it.each(['xn--zz', '☃', 'ab--cd', '💩'])(
    'when the subdomain label %j is registered, then 400 naming subdomain',
    async (label) => {
      const { app } = buildApp(deps)
      const a = await createAccount(deps)
      const zone = `${unique('va')}.test`
      await addZone(deps, zone)
      const res = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: label, rootdomain: zone })
      expect(res.status).toBe(400)
      expect(res.body.error.details.field).toBe('subdomain')
    },
  )
})

describeWithPowerDns('what is newly accepted is served by PowerDNS', () => {
  const pdns = usePowerDns()

  it('when a null MX, an unavailable SRV, an empty TXT, _ labels and a TXT with a newline are created, then dig serves each', async () => {
    const { app, zone, a } = await powerDnsApp(deps, pdns, { prefix: 'vp', timeoutMs: 2000 })
    const s = await subdomain(app, a, zone)
    for (const body of [
      { type: 'MX', content: '.', priority: 0 },
      { type: 'SRV', name: '_x._tcp', content: '.', priority: 0, weight: 0, port: 0 },
      { type: 'TXT', name: 'empty', content: '' },
      { type: 'TXT', name: '_', content: 'under' },
      { type: 'TXT', name: 'x_', content: 'line1\nline2 "quoted" \\' },
      { type: 'TXT', name: 'utf', content: 'ü' },
    ])
      await post(app, a, s.id, body).expect(201)
    expect(dig(pdns, s.full, 'MX').map((x) => x.rdata)).toEqual(['0 .'])
    expect(dig(pdns, `_x._tcp.${s.full}`, 'SRV').map((x) => x.rdata)).toEqual(['0 0 0 .'])
    expect(dig(pdns, `empty.${s.full}`, 'TXT').map((x) => x.rdata)).toEqual(['""'])
    expect(dig(pdns, `_.${s.full}`, 'TXT').map((x) => x.rdata)).toEqual(['"under"'])
    expect(dig(pdns, `x_.${s.full}`, 'TXT').map((x) => x.rdata)).toEqual([
      '"line1\\010line2 \\"quoted\\" \\\\"',
    ])
    expect(dig(pdns, `utf.${s.full}`, 'TXT').map((x) => x.rdata)).toEqual(['"\\195\\188"'])
  })
})
