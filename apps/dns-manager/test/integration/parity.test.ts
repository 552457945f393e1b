import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'
import { type Caller, graphqlCaller, type Outcome, restCaller, rpcCaller } from '../support/callers.ts'

const deps = useDeps()

/** Ids, timestamps, keys and zone names differ between the three runs; everything else must not. */
function normalise(value: unknown, zone: string, apiKey: string): unknown {
  return JSON.parse(
    JSON.stringify(value, (key, v) => {
      if (key === 'id' && typeof v === 'number') return 'ID'
      if (typeof v === 'string') {
        if (/^\d{4}-\d\d-\d\dT/.test(v)) return 'TIME'
        return v.replaceAll(zone, 'ZONE').replaceAll(apiKey, 'KEY')
      }
      return v
    }),
  )
}

async function scenario(call: Caller, zone: string): Promise<Array<[string, Outcome]>> {
  const steps: Array<[string, Outcome]> = []
  const run = async (method: string, input: Record<string, unknown>) => {
    const outcome = await call(method, input)
    steps.push([method, outcome])
    return outcome
  }
  await run('auth.verify', {})
  const created = (await run('subdomains.create', { subdomain: 'parity', rootdomain: zone })) as {
    ok: { subdomain: { id: number } }
  }
  const sub = created.ok.subdomain.id
  await run('subdomains.create', { subdomain: '-bad', rootdomain: zone })
  await run('subdomains.get', { id: 999_999 })
  await run('subdomains.get', { id: sub })
  await run('subdomains.list', {})
  const rec = (await run('dns_records.create', {
    subdomain_id: sub,
    type: 'A',
    name: 'www',
    content: '8.8.8.8',
  })) as {
    ok: { dns_record: { id: number } }
  }
  await run('dns_records.create', { subdomain_id: sub, type: 'A', content: '10.0.0.1' })
  await run('dns_records.create', { subdomain_id: sub, type: 'MX', content: 'mx.example.com', priority: 5 })
  await run('dns_records.update', {
    subdomain_id: sub,
    id: rec.ok.dns_record.id,
    content: '1.1.1.1',
    ttl: 300,
  })
  await run('dns_records.list', { subdomain_id: sub })
  await run('dns_records.get', { subdomain_id: sub, id: 999_999 })
  await run('subdomains.renew', { id: sub })
  await run('subdomains.create', { subdomain: 'second', rootdomain: zone })
  await run('whois.lookup', { domain: `parity.${zone}` })
  await run('dns_records.delete', { subdomain_id: sub, id: rec.ok.dns_record.id })
  await run('quota.get', {})
  await run('subdomains.delete', { id: sub })
  await run('subdomains.get', { id: sub })
  return steps
}

describe('parity of REST, JSON-RPC and GraphQL', () => {
  it('when one scenario runs through all three styles, then the results and error codes are the same', async () => {
    const { app } = buildApp(deps)
    const runs = []
    for (const make of [restCaller, rpcCaller, graphqlCaller]) {
      const a = await createAccount(deps, { quota: 1 })
      const zone = `${unique('par')}.test`
      await addZone(deps, zone)
      runs.push(normalise(await scenario(make(app, a), zone), zone, a.apiKey))
    }
    const [rest, rpc, graphql] = runs
    expect(rpc).toEqual(rest)
    expect(graphql).toEqual(rest)
    // The scenario really covers successes and the error codes it means to.
    const errors = (rest as Array<[string, Outcome]>)
      .filter(([, o]) => 'error' in o)
      .map(([m, o]) => `${m}:${(o as { error: string }).error}`)
    expect(errors).toEqual([
      'subdomains.create:bad_request',
      'subdomains.get:subdomain_not_found',
      'dns_records.create:bad_request',
      'dns_records.get:dns_record_not_found',
      'subdomains.renew:renewal_not_yet_available',
      'subdomains.create:quota_exceeded',
      'subdomains.get:subdomain_not_found',
    ])
  })
})
