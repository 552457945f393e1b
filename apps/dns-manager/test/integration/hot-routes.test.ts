import { request } from '@quartet/core/testing'
import { hotReadAnswers } from '@quartet/core/testing/operations'
import { dnsOperations } from '../../src/http/operations.ts'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

/**
 * The REST reads answered before express (restHotRoutes) give the answer express gives the same
 * request, header for header: the hot route takes the exact path; a trailing slash sends the
 * same request through express.
 */
const deps = useDeps()

/** Headers that differ between any two answers (the date, the request id, the rate-limit count). */
function comparable(headers: Record<string, string>) {
  const { date: _d, 'x-request-id': _id, 'ratelimit-remaining': _r, 'ratelimit-reset': _t, ...rest } = headers
  return rest
}

/** An account with one subdomain holding one A record. */
async function accountWithRecord() {
  const { app } = buildApp(deps)
  const zone = `${unique('hot')}.test`
  await addZone(deps, zone)
  const a = await createAccount(deps)
  const made = await request(app)
    .post('/rest/subdomains')
    .set(a.headers)
    .send({ subdomain: 'www1', rootdomain: zone })
    .expect(201)
  const id = made.body.subdomain.id as number
  const record = await request(app)
    .post(`/rest/subdomains/${id}/records`)
    .set(a.headers)
    .send({ type: 'A', name: 'h', content: '8.8.4.4' })
    .expect(201)
  return { app, a, id, recordId: record.body.dns_record.id as number }
}

describe('REST reads before express', () => {
  it('when each read is asked on its exact path and through express, then status, headers and body agree, under both prefixes', async () => {
    const { app, a, id } = await accountWithRecord()

    const reads: Array<['get' | 'post', string]> = [
      ['get', '/rest/quota'],
      ['post', '/rest/auth/verify'],
      ['get', '/rest/subdomains'],
      ['get', `/rest/subdomains/${id}`],
      ['get', `/rest/subdomains/${id}/records`],
      ['get', '/rest/keys'],
    ]
    for (const prefix of ['', '/api/v1'])
      for (const [method, path] of reads) {
        const hot = await request(app)[method](`${prefix}${path}`).set(a.headers)
        const viaExpress = await request(app)[method](`${prefix}${path}/`).set(a.headers)
        expect([path, hot.status]).toEqual([path, 200])
        expect(hot.body).toEqual(viaExpress.body)
        expect(comparable(hot.headers)).toEqual(comparable(viaExpress.headers))
        expect(hot.headers['cache-control']).toBe('no-store')
        expect(hot.headers['ratelimit-limit']).toBeDefined()
      }
  })

  it('when a hot read is refused (no secret, wrong secret, another account’s subdomain, an address off the allow list, a bad id), then the envelope and headers are express’s', async () => {
    const { app } = buildApp(deps)
    const zone = `${unique('hot')}.test`
    await addZone(deps, zone)
    const owner = await createAccount(deps)
    const other = await createAccount(deps)
    const fenced = await createAccount(deps, { allowList: ['203.0.113.0/24'] })
    const made = await request(app)
      .post('/rest/subdomains')
      .set(owner.headers)
      .send({ subdomain: 'own', rootdomain: zone })
      .expect(201)
    const id = made.body.subdomain.id as number

    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['/rest/quota', {}, 401, 'auth_invalid_credentials'],
      [
        '/rest/quota',
        { 'X-API-Key': owner.apiKey, 'X-API-Secret': 'f'.repeat(64) },
        401,
        'auth_invalid_credentials',
      ],
      [`/rest/subdomains/${id}/records`, other.headers, 404, 'subdomain_not_found'],
      ['/rest/quota', fenced.headers, 403, 'auth_ip_not_allowed'],
      ['/rest/subdomains/0x1/records', owner.headers, 400, 'bad_request'],
    ]
    for (const [path, headers, status, code] of cases) {
      const hot = await request(app).get(path).set(headers)
      const viaExpress = await request(app).get(`${path}/`).set(headers)
      expect([path, hot.status, hot.body.error?.code]).toEqual([path, status, code])
      expect({ ...hot.body, request_id: 'x' }).toEqual({ ...viaExpress.body, request_id: 'x' })
      expect(hot.body.request_id).toBe(hot.headers['x-request-id'])
      expect(comparable(hot.headers)).toEqual(comparable(viaExpress.headers))
    }
  })

  it('when every hot read is sent before express and to express alone (core hotReadAnswers), then the answers agree, under both prefixes', async () => {
    const { app, a, id, recordId } = await accountWithRecord()
    const other = await createAccount(deps)
    const reads: Array<[string, string, Record<string, string>]> = [
      ['auth.verify', '/rest/auth/verify', a.headers],
      ['quota.get', '/rest/quota', a.headers],
      ['quota.get', '/rest/quota', {}],
      ['subdomains.list', '/rest/subdomains', a.headers],
      ['subdomains.get', `/rest/subdomains/${id}`, a.headers],
      ['subdomains.get', `/rest/subdomains/${id}`, other.headers],
      ['dns_records.list', `/rest/subdomains/${id}/records`, a.headers],
      ['dns_records.get', `/rest/subdomains/${id}/records/${recordId}`, a.headers],
      ['dns_records.get', `/rest/subdomains/${id}/records/0x1`, a.headers],
      ['keys.list', '/rest/keys', a.headers],
      ['whois.lookup', '/rest/whois', a.headers],
      ['system.info', '/rest/system', a.headers],
    ]
    const examples = ['', '/api/v1'].flatMap((prefix) =>
      reads.map(([operation, path, headers]) => ({ operation, path: `${prefix}${path}`, headers })),
    )
    const { hot, express } = await hotReadAnswers(app, dnsOperations, examples)
    expect(hot.map((answer) => answer.status)).toEqual(
      [...Array(2)].flatMap(() => [200, 200, 401, 200, 200, 404, 200, 200, 400, 200, 400, 200]),
    )
    expect(hot).toEqual(express)
  })
})
