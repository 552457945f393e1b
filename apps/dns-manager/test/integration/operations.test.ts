import { fixedClock } from '@quartet/core/clock'
import { type AnyOperation, publicAccess, routesOf } from '@quartet/core/operation'
import { request } from '@quartet/core/testing'
import {
  expectDocumentedAnswer,
  expectDocumentedError,
  expressRoutesOf,
  operationsWithoutRoute,
  routesWithoutOperation,
} from '@quartet/core/testing/operations'
import { backOfficeOperations } from '../../src/http/back-office/register.ts'
import type { DnsOperation } from '../../src/http/define.ts'
import { dnsOperations, operationsByName } from '../../src/http/operations.ts'
import {
  addZone,
  buildApp,
  createAccount,
  type Express,
  type TestAccount,
  unique,
  useDeps,
} from '../helpers.ts'
import { browserAgent, freeZone, PASSWORD, signUp, startBackOffice, tokenIn } from '../support/back-office.ts'
import { graphqlCaller, rpcCaller } from '../support/callers.ts'

const deps = useDeps()

/** An answer's objects, as the calls below read their ids from them. */
type Answer = Record<string, { id: number | string }>
const PREFIXES = ['', '/api/v1']

/** A REST call of the operation, its path parameters filled in from `input` and the rest sent as query or body. */
async function rest(app: Express, a: TestAccount, op: DnsOperation, input: Record<string, unknown>) {
  const rest = { ...input }
  const path = op.route.path.replace(/:([a-z_]+)/g, (_m, p: string) => {
    const v = rest[p]
    delete rest[p]
    return String(v)
  })
  const req = request(app)[op.route.method](path).set(a.headers)
  return op.route.method === 'get' ? req.query(rest) : req.send(rest)
}

describe('dns-manager operations', () => {
  it('when the app is built, then its REST routes are exactly the operations’ routes, under each prefix', () => {
    const { app } = buildApp(deps)
    const served = expressRoutesOf(app)
      // The router mounted at `/` walks as `//rest/…`.
      .map((r) => ({ ...r, path: r.path.replace(/^\/+/, '/') }))
      .filter((r) => /^(\/api\/v1)?\/rest\//.test(r.path))
      .map((r) => `${r.method} ${r.path}`)
      .sort()
    const defined = dnsOperations
      .flatMap((op) => routesOf(op))
      .flatMap((r) => PREFIXES.map((p) => `${r.method} ${p}${r.path}`))
      .sort()
    expect(served).toEqual(defined)
  })

  it('when /openapi.json is read, then every route of every operation is there, with an output schema for its success status', async () => {
    const { app } = buildApp(deps)
    const res = await request(app).get('/openapi.json').expect(200)
    for (const op of dnsOperations)
      for (const route of routesOf(op)) {
        const documented = res.body.paths[route.path.replace(/:(\w+)/g, '{$1}')][route.method]
        expect(documented.operationId).toBe(route.operationId ?? op.name)
        const success = documented.responses[String(op.status)]
        if (op.raw) expect(Object.keys(success.content)).toEqual(['text/dns'])
        else
          expect(success.content['application/json'].schema.properties).toMatchObject({
            success: { const: true },
          })
        expect(documented.responses['401'].description).toContain('credentials')
      }
  })

  it('when each operation is called over REST and JSON-RPC, then its answers parse with its documented output schema', async () => {
    // A clock a year ahead for the renewal, whose window opens shortly before expiry.
    const clock = fixedClock(new Date())
    const { app } = buildApp(deps, { clock })
    const root = `${unique('ops')}.test`
    await addZone(deps, root)
    const a = await createAccount(deps, { quota: 5, balanceCents: 1000 })
    const rpc = rpcCaller(app, a)
    const called = new Set<string>()
    const call = async (name: string, input: Record<string, unknown>): Promise<Answer> => {
      const op = operationsByName.get(name)!
      const res = await rest(app, a, op, input)
      called.add(name)
      if (op.raw) {
        expect(res.status).toBe(op.status)
        expect(res.headers['content-type']).toBe('text/dns; charset=utf-8')
        return { zone: res.text } as never as Answer
      }
      if (res.status >= 400) throw new Error(`${name}: ${JSON.stringify(res.body)}`)
      return expectDocumentedAnswer(op, res) as never
    }
    const viaRpc = async (name: string, input: Record<string, unknown>) => {
      const outcome = await rpc(name, input)
      expect(outcome).toHaveProperty('ok')
      return operationsByName.get(name)!.output.parse((outcome as { ok: unknown }).ok) as Answer
    }

    await call('auth.verify', {})
    await call('quota.get', {})
    await call('system.info', {})
    const created = await call('subdomains.create', { subdomain: 'ops', rootdomain: root })
    const id = Number(created.subdomain!.id)
    await call('subdomains.list', { per_page: 5 })
    await call('subdomains.get', { id })
    await call('whois.lookup', { domain: `ops.${root}` })
    const record = await call('dns_records.create', { subdomain_id: id, type: 'A', content: '93.184.216.34' })
    const recordId = Number(record.dns_record!.id)
    await call('dns_records.list', { subdomain_id: id })
    await call('dns_records.get', { subdomain_id: id, id: recordId })
    await call('dns_records.update', { subdomain_id: id, id: recordId, ttl: 600 })
    expect((await call('subdomains.zone', { id })).zone as unknown as string).toContain('93.184.216.34')
    await call('dns_records.delete', { subdomain_id: id, id: recordId })
    const challenge = { fqdn: `_acme-challenge.ops.${root}.`, value: 'v'.repeat(43) }
    await call('acme.present', challenge)
    await call('acme.cleanup', challenge)
    const key = await call('keys.create', { scope: 'dyndns', subdomain_id: id })
    await call('keys.list', {})
    const keyId = String(key.key!.id)
    await call('keys.regenerate', { id: keyId })
    await call('keys.delete', { id: keyId })
    clock.advance(360 * 24 * 3600_000)
    await call('subdomains.renew', { id })
    await call('subdomains.delete', { id })
    expect([...called].sort()).toEqual(dnsOperations.map((op) => op.name).sort())

    // The other call styles answer the same output schemas, without REST's `success`.
    await viaRpc('auth.verify', {})
    await viaRpc('system.info', {})
    const again = await viaRpc('subdomains.create', { subdomain: 'ops2', rootdomain: root })
    await viaRpc('subdomains.zone', { id: again.subdomain!.id })
    await viaRpc('dns_records.list', { subdomain_id: again.subdomain!.id })
    const viaGraphql = await graphqlCaller(app, a)('subdomains.get', { id: again.subdomain!.id })
    operationsByName.get('subdomains.get')!.output.parse((viaGraphql as { ok: unknown }).ok)
  })
})

describe('dns-manager back-office operations', () => {
  const byName = new Map<string, AnyOperation>(backOfficeOperations.map((op) => [op.name, op]))
  const isWrite = (op: AnyOperation) => op.route.method !== 'get'

  it('when the app is built, then every route under /account/api is a back-office operation and every one is served', () => {
    const { app } = buildApp(deps)
    const api = routesWithoutOperation(app, backOfficeOperations).filter((r) =>
      r.path.startsWith('/account/api'),
    )
    expect(api).toEqual([])
    expect(operationsWithoutRoute(app, backOfficeOperations)).toEqual([])
  })

  it('when /openapi.json is read, then each back-office operation is there from its definition: output schemas, the session, CSRF', async () => {
    const { app } = buildApp(deps)
    const res = await request(app).get('/openapi.json').expect(200)
    expect(res.body.components.securitySchemes.accountSession).toEqual({
      type: 'apiKey',
      in: 'cookie',
      name: 'qdm_session',
    })
    for (const op of backOfficeOperations) {
      const documented = res.body.paths[op.route.path.replace(/:(\w+)/g, '{$1}')][op.route.method]
      expect(documented.operationId).toBe(op.name)
      expect(documented.tags).toEqual(['back office'])
      for (const status of Object.keys(op.responses))
        expect(documented.responses[status].content['application/json'].schema).toBeDefined()
      if (op.auth === publicAccess) expect(documented.security).toEqual([])
      else {
        expect(documented.security).toEqual([{ accountSession: [] }])
        expect(documented.responses['401'].description).toContain('sign in first')
      }
      if (isWrite(op)) expect(documented.responses['403'].description).toContain('X-Requested-With')
    }
  })

  it('when each back-office operation is called, then its answer parses with its documented output schema', async () => {
    const bo = await startBackOffice(deps)
    try {
      const zone = await freeZone(deps)
      const called = new Set<string>()
      const check = (name: string, res: { status: number; body: unknown }) => {
        called.add(name)
        if (res.status >= 400) throw new Error(`${name}: ${JSON.stringify(res.body)}`)
        return expectDocumentedAnswer(byName.get(name)!, res)
      }
      const { browser, email } = await signUp(bo)
      const anon = browserAgent(bo.url)
      const other = `${unique('ops')}@example.test`
      check('signupStart', await anon.post('/account/api/signup', { email: other }))
      const token = tokenIn((await bo.smtp.mailTo(other)).text, '/account/signup/complete')
      check('signupLink', await anon.get(`/account/api/signup/link?token=${token}`))
      check('signupComplete', await anon.post('/account/api/signup/complete', { token, password: PASSWORD }))
      check('backOfficeSite', await browser.get('/account/api/site'))
      check('account', await browser.get('/account/api/account'))
      check('accountSettings', await browser.post('/account/api/account/settings', { ip_allow_list: [] }))
      check('pageOperation', await browser.op('quota.get'))
      check('pageOperation', await browser.op('subdomains.create', { subdomain: 'bo', rootdomain: zone }))
      check('auditLog', await browser.get('/account/api/audit?limit=5'))
      const changed = 'another long password'
      check(
        'changePassword',
        await browser.post('/account/api/account/password', {
          current_password: PASSWORD,
          new_password: changed,
        }),
      )
      check('signout', await browser.post('/account/api/signout'))
      check('signin', await browser.post('/account/api/signin', { email, password: changed }))
      check('resetRequest', await browser.post('/account/api/reset', { email }))
      const reset = tokenIn((await bo.smtp.mailTo(email)).text, '/account/reset/complete')
      check(
        'resetComplete',
        await browser.post('/account/api/reset/complete', { token: reset, password: PASSWORD }),
      )
      expect([...called].sort()).toEqual(backOfficeOperations.map((op) => op.name).sort())
    } finally {
      await bo.close()
    }
  })

  it('when a back-office operation is refused for want of a session or of the CSRF header, then it documents that status', async () => {
    const { app } = buildApp(deps)
    for (const op of backOfficeOperations) {
      // The one path parameter: op/:name.
      const url = op.route.path.replace(':name', 'quota.get')
      const send = (agent: ReturnType<typeof request>) =>
        isWrite(op) ? agent.post(url).send({}) : agent.get(url)
      if (op.auth !== publicAccess) {
        const anonymous = await send(request(app))
          .set('X-Requested-With', 'fetch')
          .set('Sec-Fetch-Site', 'same-origin')
        expect(anonymous.status).toBe(401)
        expectDocumentedError(op, anonymous)
      }
      if (isWrite(op)) {
        const forged = await send(request(app))
        expect(forged.body.error.code).toBe('csrf_rejected')
        expectDocumentedError(op, forged)
      }
    }
  })
})
