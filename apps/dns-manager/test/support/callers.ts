import type { Express } from 'express'
import { request } from '@quartet/core/testing'
import { operationsByName } from '../../src/http/operations.ts'

/**
 * One caller per call style, each running an operation by name with the same
 * input and answering `{ok: output}` or `{error: code}`, so a test can run one scenario through
 * REST, JSON-RPC and GraphQL and compare.
 */
type Headers = Record<string, string>

export type Outcome = { ok: unknown } | { error: string }
export type Caller = (method: string, input: Record<string, unknown>) => Promise<Outcome>

const SUB = 'id subdomain rootdomain full_domain status created_at updated_at expires_at never_expires'
const REC = 'id name type content ttl priority weight port flag tag created_at updated_at'
export const selections: Record<string, string> = {
  'auth.verify': '{ account { api_key quota { used total available } } }',
  'quota.get': '{ quota { used total available } balance_cents }',
  'subdomains.create': `{ subdomain { ${SUB} } }`,
  'subdomains.get': `{ subdomain { ${SUB} } }`,
  'subdomains.list': `{ subdomains { ${SUB} } next_cursor }`,
  'subdomains.renew': `{ subdomain { ${SUB} } charged_cents balance_cents }`,
  'subdomains.delete': '{ deleted id }',
  'dns_records.create': `{ dns_record { ${REC} } }`,
  'dns_records.update': `{ dns_record { ${REC} } }`,
  'dns_records.get': `{ dns_record { ${REC} } }`,
  'dns_records.list': `{ dns_records { ${REC} } next_cursor }`,
  'dns_records.delete': '{ deleted id }',
  'whois.lookup': '{ whois { domain rootdomain status created_at expires_at nameservers } }',
  'keys.list': '{ keys { id api_key scope subdomain_id created_at last_used_at current } }',
  'keys.create': '{ key { id api_key api_secret scope subdomain_id created_at } }',
  'acme.present': '{ challenge { fqdn value subdomain_id changed } }',
  'acme.cleanup': '{ challenge { fqdn value subdomain_id changed } }',
}

export function restCaller(app: Express, a: { headers: Headers }): Caller {
  return async (method, input) => {
    const op = operationsByName.get(method)!
    const rest = { ...input }
    const path = op.route.path.replace(/:([a-z_]+)/g, (_m, p: string) => {
      const v = rest[p]
      delete rest[p]
      return String(v)
    })
    const req = request(app)[op.route.method](path).set(a.headers)
    const res = op.route.method === 'get' ? await req.query(rest) : await req.send(rest)
    if (res.body.success === true) {
      const { success: _s, ...output } = res.body
      return { ok: output }
    }
    return { error: res.body.error.code }
  }
}

export function rpcCaller(app: Express, a: { headers: Headers }): Caller {
  let id = 0
  return async (method, input) => {
    const res = await request(app)
      .post('/rpc')
      .set(a.headers)
      .send({ jsonrpc: '2.0', method, params: input, id: ++id })
    return 'result' in res.body ? { ok: res.body.result } : { error: res.body.error.data.error_code }
  }
}

export function graphqlCaller(app: Express, a: { headers: Headers }): Caller {
  return async (method, input) => {
    const op = operationsByName.get(method)!
    const types = new Map(
      [...op.graphql.args.matchAll(/(\w+): (\w+!?)/g)].map((m) => [m[1]!, m[2]!] as const),
    )
    const names = Object.keys(input)
    const vars = names.map((n) => `$${n}: ${types.get(n)}`).join(', ')
    const args = names.map((n) => `${n}: $${n}`).join(', ')
    const query = `${op.graphql.kind}${vars ? `(${vars})` : ''} { ${op.graphql.field}${args ? `(${args})` : ''} ${selections[method]} }`
    const res = await request(app).post('/graphql').set(a.headers).send({ query, variables: input })
    if (res.body.errors?.length) return { error: res.body.errors[0].extensions.code }
    return { ok: res.body.data[op.graphql.field] }
  }
}
