import { createServer, type IncomingMessage, type Server } from 'node:http'
import { request } from '@quartet/core/testing'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

/**
 * The real Cloudflare API is out of reach from tests, so this is a small stand-in of its DNS
 * records API v4 on loopback that checks every request (bearer token, paths, bodies) and keeps
 * the records it was given, like the upstream would.
 */
interface CfRecord {
  id: string
  type: string
  name: string
  ttl: number
  content?: string
  priority?: number
  data?: Record<string, unknown>
}
function cloudflareStandIn(token: string, zoneName: string) {
  const zoneId = 'z0123456789abcdef'
  const records = new Map<string, CfRecord>()
  const calls: string[] = []
  let failNextPost = false
  let next = 1
  const body = (req: IncomingMessage) =>
    new Promise<Record<string, unknown>>((resolve) => {
      let s = ''
      req.on('data', (c: Buffer) => (s += c.toString()))
      req.on('end', () => resolve(s ? (JSON.parse(s) as Record<string, unknown>) : {}))
    })
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, payload: object) => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(payload))
    }
    const url = new URL(req.url!, 'http://x')
    calls.push(`${req.method} ${url.pathname}`)
    if (req.headers.authorization !== `Bearer ${token}`)
      return send(403, {
        success: false,
        errors: [{ code: 10000, message: 'Authentication error' }],
        result: null,
      })
    if (req.method === 'GET' && url.pathname === '/client/v4/zones')
      return send(200, {
        success: true,
        errors: [],
        result: url.searchParams.get('name') === zoneName ? [{ id: zoneId, name: zoneName }] : [],
      })
    const base = `/client/v4/zones/${zoneId}/dns_records`
    if (req.method === 'GET' && url.pathname === base) {
      // With name and type: that RRset's records; without: the whole zone, page by page.
      const name = url.searchParams.get('name')
      const type = url.searchParams.get('type')
      const perPage = Number(url.searchParams.get('per_page') ?? 100)
      const page = Number(url.searchParams.get('page') ?? 1)
      const all = [...records.values()].filter(
        (r) => (name === null || r.name === name) && (type === null || r.type === type),
      )
      const hits = all.slice((page - 1) * perPage, page * perPage)
      return send(200, { success: true, errors: [], result: hits })
    }
    if (req.method === 'POST' && url.pathname === base) {
      const b = await body(req)
      if (failNextPost) {
        failNextPost = false
        return send(400, {
          success: false,
          errors: [{ code: 9005, message: 'Content for A record is invalid' }],
          result: null,
        })
      }
      if (
        typeof b.type !== 'string' ||
        typeof b.name !== 'string' ||
        typeof b.ttl !== 'number' ||
        b.proxied !== false
      )
        return send(400, {
          success: false,
          errors: [{ code: 9000, message: 'bad record body' }],
          result: null,
        })
      const id = `r${next++}`
      records.set(id, { id, ...(b as Omit<CfRecord, 'id'>) })
      return send(200, { success: true, errors: [], result: records.get(id) })
    }
    const m = new RegExp(`^${base}/(r\\d+)$`).exec(url.pathname)
    if (req.method === 'DELETE' && m && records.delete(m[1]!))
      return send(200, { success: true, errors: [], result: { id: m[1] } })
    return send(404, { success: false, errors: [{ code: 7003, message: 'not found' }], result: null })
  })
  return {
    server,
    records,
    calls,
    failNextPost: () => {
      failNextPost = true
    },
    listen: () =>
      new Promise<string>((r) =>
        server.listen(0, '127.0.0.1', () =>
          r(`http://127.0.0.1:${(server.address() as { port: number }).port}/client/v4`),
        ),
      ),
    close: () => new Promise((r) => server.close(r)),
  }
}

describe('the Cloudflare provider (DNS records API v4)', () => {
  it('when records are created, updated and deleted, then Cloudflare receives the matching calls with the bearer token', async () => {
    const zone = `${unique('cf')}.test`
    const cf = cloudflareStandIn('cf-token', zone)
    const url = await cf.listen()
    try {
      await addZone(deps, zone)
      const a = await createAccount(deps)
      const { app } = buildApp(deps, {
        env: { DNS_PROVIDER: 'cloudflare', CLOUDFLARE_API_URL: url, CLOUDFLARE_API_TOKEN: 'cf-token' },
      })
      const s = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: 'cf', rootdomain: zone })
        .expect(201)
      const id = s.body.subdomain.id
      const rec = await request(app)
        .post(`/rest/subdomains/${id}/records`)
        .set(a.headers)
        .send({ type: 'A', content: '8.8.8.8' })
        .expect(201)
      await request(app)
        .post(`/rest/subdomains/${id}/records`)
        .set(a.headers)
        .send({
          type: 'SRV',
          name: '_sip._tcp',
          content: 'sip.example.com',
          priority: 1,
          weight: 2,
          port: 5060,
        })
        .expect(201)
      await request(app)
        .post(`/rest/subdomains/${id}/records`)
        .set(a.headers)
        .send({ type: 'CAA', content: 'letsencrypt.org', tag: 'issue' })
        .expect(201)
      expect([...cf.records.values()].map(({ id: _id, ...r }) => r)).toEqual([
        { type: 'A', name: `cf.${zone}`, ttl: 600, proxied: false, content: '8.8.8.8' },
        {
          type: 'SRV',
          name: `_sip._tcp.cf.${zone}`,
          ttl: 600,
          proxied: false,
          data: { priority: 1, weight: 2, port: 5060, target: 'sip.example.com' },
        },
        {
          type: 'CAA',
          name: `cf.${zone}`,
          ttl: 600,
          proxied: false,
          data: { flags: 0, tag: 'issue', value: 'letsencrypt.org' },
        },
      ])
      await request(app)
        .patch(`/rest/subdomains/${id}/records/${rec.body.dns_record.id}`)
        .set(a.headers)
        .send({ content: '1.1.1.1' })
        .expect(200)
      const a4 = [...cf.records.values()].filter((r) => r.type === 'A')
      expect(a4.map((r) => r.content)).toEqual(['1.1.1.1'])
      // Cloudflare refuses: 502, the database keeps the old value, Cloudflare keeps its records.
      cf.failNextPost()
      await request(app)
        .patch(`/rest/subdomains/${id}/records/${rec.body.dns_record.id}`)
        .set(a.headers)
        .send({ content: '4.4.4.4' })
        .expect(502)
      expect(
        (await request(app).get(`/rest/subdomains/${id}/records/${rec.body.dns_record.id}`).set(a.headers))
          .body.dns_record.content,
      ).toBe('1.1.1.1')
      expect([...cf.records.values()].filter((r) => r.type === 'A').map((r) => r.content)).toEqual([
        '1.1.1.1',
      ])
      await request(app).delete(`/rest/subdomains/${id}`).set(a.headers).expect(200)
      expect(cf.records.size).toBe(0)
      expect(
        cf.calls.filter((c) => c.startsWith('GET /client/v4/zones') && !c.includes('dns_records')),
      ).toHaveLength(1) // zone id cached
    } finally {
      await cf.close()
    }
  })

  it('when the token is wrong, then 502 provider_operation_failed and nothing is stored', async () => {
    const zone = `${unique('cf')}.test`
    const cf = cloudflareStandIn('right', zone)
    const url = await cf.listen()
    try {
      await addZone(deps, zone)
      const a = await createAccount(deps)
      const { app } = buildApp(deps, {
        env: { DNS_PROVIDER: 'cloudflare', CLOUDFLARE_API_URL: url, CLOUDFLARE_API_TOKEN: 'wrong' },
      })
      const s = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: 'cf', rootdomain: zone })
        .expect(201)
      await request(app)
        .post(`/rest/subdomains/${s.body.subdomain.id}/records`)
        .set(a.headers)
        .send({ type: 'A', content: '8.8.8.8' })
        .expect(502)
      expect(
        (await deps.database.query('SELECT 1 FROM dns_record WHERE subdomain_id = $1', [s.body.subdomain.id]))
          .rowCount,
      ).toBe(0)
    } finally {
      await cf.close()
    }
  })

  it('when records are added at Cloudflare behind our back, then deleting a subdomain removes them too and anti-entropy removes those under names nobody owns', async () => {
    const zone = `${unique('cf')}.test`
    const cf = cloudflareStandIn('cf-token', zone)
    const url = await cf.listen()
    try {
      await addZone(deps, zone)
      const a = await createAccount(deps)
      const { app, useCases } = buildApp(deps, {
        env: { DNS_PROVIDER: 'cloudflare', CLOUDFLARE_API_URL: url, CLOUDFLARE_API_TOKEN: 'cf-token' },
      })
      const created = await request(app)
        .post('/rest/subdomains')
        .set(a.headers)
        .send({ subdomain: 'cf', rootdomain: zone })
        .expect(201)
      const id = created.body.subdomain.id
      await request(app)
        .post(`/rest/subdomains/${id}/records`)
        .set(a.headers)
        .send({ type: 'A', content: '8.8.8.8' })
        .expect(201)
      let next = 1000
      const stray = (name: string, content: string) => {
        const rid = `r${next++}`
        cf.records.set(rid, { id: rid, type: 'A', name, ttl: 600, content })
      }
      stray(`stray.cf.${zone}`, '6.6.6.6') // under the subdomain, unknown to the database
      stray(`gone.${zone}`, '6.6.6.7') // under a label nobody owns
      stray(`www.${zone}`, '9.9.9.9') // a reserved label: the operator's
      const result = await useCases.reconcileUpstream()
      expect(result.repaired.map((r) => `${r.name} ${r.action}`).sort()).toEqual(
        [`gone.${zone} delete`, `stray.cf.${zone} delete`].sort(),
      )
      stray(`late.cf.${zone}`, '6.6.6.8')
      await request(app).delete(`/rest/subdomains/${id}`).set(a.headers).expect(200)
      expect([...cf.records.values()].map((r) => r.name)).toEqual([`www.${zone}`])
    } finally {
      await cf.close()
    }
  })
})
