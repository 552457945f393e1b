import { metricsRegistryOf } from '@quartet/core/http'
import { request } from '@quartet/core/testing'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { buildApp, createAccount, type TestAccount, useDeps } from '../helpers.ts'
import { addPowerDnsZone, describeWithPowerDns, dig, providerOn, usePowerDns } from '../support/powerdns.ts'

/**
 * What the API says is what DNS serves, when the upstream is slow rather than down (issue 22): a
 * real PowerDNS frozen with SIGSTOP while it holds a request, then woken, and `dig` against it.
 */
const deps = useDeps()

async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

// Calls that time out on purpose (2.5 s each), and PowerDNS waking to apply them: more than jest's
// 30 s for a case on a loaded CI machine.
jest.setTimeout(120_000)

describeWithPowerDns('convergence with a real PowerDNS that freezes mid-call', () => {
  const pdns = usePowerDns()
  const realProvider = (timeoutMs: number) => providerOn(pdns, timeoutMs)

  /**
   * The real provider, except that PowerDNS is frozen (SIGSTOP) just before the next change is
   * sent: the request reaches a real, stopped PowerDNS, which applies it when it wakes.
   */
  function freezingProvider(timeoutMs: number) {
    const real = realProvider(timeoutMs)
    let armed = false
    const provider: DnsProvider = {
      ...real,
      kind: real.kind,
      applyRRsets: (zone, rrsets) => {
        if (armed) {
          armed = false
          pdns.freeze()
        }
        return real.applyRRsets(zone, rrsets)
      },
    }
    return { provider, freezeAtNextChange: () => (armed = true) }
  }

  async function setup(options: { timeoutMs?: number; label?: string } = {}) {
    // Long enough for PowerDNS's calls that are meant to succeed on a loaded CI machine (a delete
    // right after PowerDNS woke met 1 s); a frozen call still times out, just later.
    const timeoutMs = options.timeoutMs ?? 2500
    const zone = await addPowerDnsZone(deps, realProvider(2000), 'cv')
    const hook = freezingProvider(timeoutMs)
    const built = buildApp(deps, { provider: hook.provider, env: { PROVIDER_TIMEOUT_MS: String(timeoutMs) } })
    const a = await createAccount(deps)
    const label = options.label ?? 'web'
    const s = await request(built.app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: label, rootdomain: zone })
      .expect(201)
    return { ...built, ...hook, zone, a, id: s.body.subdomain.id as number, fqdn: `${label}.${zone}` }
  }

  const addRecord = (app: Parameters<typeof request>[0], a: TestAccount, id: number, body: object) =>
    request(app).post(`/rest/subdomains/${id}/records`).set(a.headers).send(body)

  /** The API's records of one name and type, as `dig` prints their RDATA. */
  async function listed(
    app: Parameters<typeof request>[0],
    a: TestAccount,
    id: number,
    name: string,
    type: string,
  ) {
    const res = await request(app).get(`/rest/subdomains/${id}/records`).set(a.headers)
    if (res.status === 404) return []
    expect(res.status).toBe(200)
    return (res.body.dns_records as Array<{ name: string; type: string; content: string }>)
      .filter((r) => r.name === name && r.type === type)
      .map((r) => (type === 'TXT' ? `"${r.content}"` : r.content))
      .sort()
  }
  const served = (name: string, type: string) => dig(pdns, name, type).map((x) => x.rdata)

  it('when PowerDNS is frozen during a create, then 502, it applies the create on waking, and the repair job removes it again', async () => {
    const { app, useCases, a, id, fqdn } = await setup()
    pdns.freeze()
    const res = await addRecord(app, a, id, { type: 'A', name: '@', content: '1.2.8.1' })
    pdns.thaw()
    expect(res.status).toBe(502)
    expect(res.body.error.code).toBe('provider_operation_failed')
    // The unknown outcome: PowerDNS took the request before it froze and applies it now.
    await eventually(() => served(fqdn, 'A').includes('1.2.8.1'), 'PowerDNS serves the timed-out create')
    expect(await listed(app, a, id, '@', 'A')).toEqual([])

    const result = await useCases.repairUpstream()
    expect(result.repaired).toEqual([
      { zone: expect.any(String), name: fqdn, type: 'A', action: 'delete', source: 'repair' },
    ])
    expect(served(fqdn, 'A')).toEqual(await listed(app, a, id, '@', 'A'))
    expect(served(fqdn, 'A')).toEqual([])
  })

  it('when PowerDNS freezes during an update, then 502 with the old value kept, and DNS serves the old value after the repair', async () => {
    const { app, useCases, a, id, fqdn, freezeAtNextChange } = await setup()
    const rec = await addRecord(app, a, id, { type: 'A', name: '@', content: '1.2.8.1' }).expect(201)
    freezeAtNextChange()
    const res = await request(app)
      .patch(`/rest/subdomains/${id}/records/${rec.body.dns_record.id}`)
      .set(a.headers)
      .send({ content: '1.2.8.2' })
    pdns.thaw()
    expect(res.status).toBe(502)
    await eventually(() => served(fqdn, 'A').includes('1.2.8.2'), 'PowerDNS serves the timed-out update')
    expect(await listed(app, a, id, '@', 'A')).toEqual(['1.2.8.1'])

    await useCases.repairUpstream()
    expect(served(fqdn, 'A')).toEqual(['1.2.8.1'])
    expect(served(fqdn, 'A')).toEqual(await listed(app, a, id, '@', 'A'))
  })

  it('when PowerDNS freezes during a record delete, then 502 with the record still listed, and DNS serves it again after the repair', async () => {
    const { app, useCases, a, id, fqdn, freezeAtNextChange } = await setup()
    const rec = await addRecord(app, a, id, { type: 'TXT', name: 'info', content: 'kept' }).expect(201)
    freezeAtNextChange()
    const res = await request(app)
      .delete(`/rest/subdomains/${id}/records/${rec.body.dns_record.id}`)
      .set(a.headers)
    pdns.thaw()
    expect(res.status).toBe(502)
    await eventually(
      () => served(`info.${fqdn}`, 'TXT').length === 0,
      'PowerDNS applies the timed-out delete',
    )
    expect(await listed(app, a, id, 'info', 'TXT')).toEqual(['"kept"'])

    await useCases.repairUpstream()
    expect(served(`info.${fqdn}`, 'TXT')).toEqual(['"kept"'])
  })

  it('when PowerDNS freezes during a subdomain delete, then 502, the subdomain stays active with its records, and DNS serves them again after the repair', async () => {
    const { app, useCases, a, id, fqdn, freezeAtNextChange } = await setup()
    await addRecord(app, a, id, { type: 'A', name: '@', content: '1.2.8.1' }).expect(201)
    await addRecord(app, a, id, { type: 'TXT', name: 'www', content: 'hello' }).expect(201)
    freezeAtNextChange()
    const res = await request(app).delete(`/rest/subdomains/${id}`).set(a.headers)
    pdns.thaw()
    expect(res.status).toBe(502)
    await eventually(() => served(fqdn, 'A').length === 0, 'PowerDNS applies the timed-out deletion')
    const again = await request(app).get(`/rest/subdomains/${id}`).set(a.headers).expect(200)
    expect(again.body.subdomain.status).toBe('active')
    // The subdomain takes changes again (it is no longer being released).
    await addRecord(app, a, id, { type: 'A', name: 'api', content: '1.2.8.3' }).expect(201)

    await useCases.repairUpstream()
    expect(served(fqdn, 'A')).toEqual(await listed(app, a, id, '@', 'A'))
    expect(served(fqdn, 'A')).toEqual(['1.2.8.1'])
    expect(served(`www.${fqdn}`, 'TXT')).toEqual(['"hello"'])
    expect(served(`api.${fqdn}`, 'A')).toEqual(['1.2.8.3'])
  })

  it("when account 1's timed-out record lands and account 1 deletes the subdomain, then account 2's registration of the label serves nothing of it", async () => {
    const first = await setup({ label: 'shared' })
    // Two writes that time out, each applied by PowerDNS when it wakes (one at a time: its
    // sqlite backend refuses a PATCH that meets another).
    for (const [name, content] of [
      ['@', '1.2.8.1'],
      ['deep.er', '1.2.8.4'],
    ] as const) {
      pdns.freeze()
      const res = await addRecord(first.app, first.a, first.id, { type: 'A', name, content })
      pdns.thaw()
      expect(res.status).toBe(502)
      const fqdn = name === '@' ? first.fqdn : `${name}.${first.fqdn}`
      await eventually(() => served(fqdn, 'A').includes(content), `PowerDNS serves ${fqdn} A ${content}`)
    }
    expect(await listed(first.app, first.a, first.id, '@', 'A')).toEqual([])
    // Deleting removes everything served at and under the name, whatever the database knows.
    await request(first.app).delete(`/rest/subdomains/${first.id}`).set(first.a.headers).expect(200)
    expect(served(first.fqdn, 'A')).toEqual([])
    expect(served(`deep.er.${first.fqdn}`, 'A')).toEqual([])

    const b = await createAccount(deps)
    const s2 = await request(first.app)
      .post('/rest/subdomains')
      .set(b.headers)
      .send({ subdomain: 'shared', rootdomain: first.zone })
      .expect(201)
    const id2 = s2.body.subdomain.id
    expect(await listed(first.app, b, id2, '@', 'A')).toEqual([])
    expect(served(first.fqdn, 'A')).toEqual([])
    // The repair marks of account 1's failed write now re-assert account 2's state, not account 1's.
    await addRecord(first.app, b, id2, { type: 'A', name: '@', content: '1.2.8.9' }).expect(201)
    await first.useCases.repairUpstream()
    expect(served(first.fqdn, 'A')).toEqual(['1.2.8.9'])
    expect(served(first.fqdn, 'A')).toEqual(await listed(first.app, b, id2, '@', 'A'))
  })

  it('when RRsets drift upstream by hand, then the anti-entropy job repairs those it manages, counts and logs them, and leaves the operator’s alone', async () => {
    const { app, useCases, a, id, fqdn, zone } = await setup()
    await addRecord(app, a, id, { type: 'A', name: '@', content: '1.2.8.1' }).expect(201)
    const other = await setup() // another zone: its RRsets are compared too
    await addRecord(other.app, other.a, other.id, { type: 'A', name: '@', content: '1.2.8.7' }).expect(201)
    // Edits behind dns-manager's back, straight at PowerDNS.
    const rr = (name: string, type: string, content: string) => ({
      name: `${name}.`,
      type,
      ttl: 600,
      changetype: 'REPLACE',
      records: [{ content, disabled: false }],
    })
    const patch = await fetch(`${pdns.apiUrl}/api/v1/servers/localhost/zones/${zone}.`, {
      method: 'PATCH',
      headers: { 'X-API-Key': pdns.apiKey, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        rrsets: [
          rr(fqdn, 'A', '6.6.6.6'), // changed
          rr(`extra.${fqdn}`, 'TXT', '"not in the database"'), // added under a subdomain
          rr(`ghost.${zone}`, 'A', '6.6.6.7'), // under a label nobody owns
          rr(`deep.ghost2.${zone}`, 'MX', '10 mx.example.org.'),
          rr(`www.${zone}`, 'A', '9.9.9.9'), // a reserved label: the operator's
          rr(`_acme-challenge.${zone}`, 'TXT', '"operator"'), // not a registrable label
          rr(zone, 'TXT', '"apex"'), // the zone's apex: the operator's
        ],
      }),
    })
    expect(patch.status).toBe(204)

    const result = await useCases.reconcileUpstream()
    expect(result.skipped).toBeUndefined()
    // Every zone of the database is compared (other tests' zones too); these two are this test's.
    const ours = result.repaired.filter((r) => r.zone === zone || r.zone === other.zone)
    expect(ours.map((r) => `${r.name} ${r.type} ${r.action}`).sort()).toEqual(
      [
        `${fqdn} A replace`,
        `extra.${fqdn} TXT delete`,
        `ghost.${zone} A delete`,
        `deep.ghost2.${zone} MX delete`,
      ].sort(),
    )
    expect(served(fqdn, 'A')).toEqual(['1.2.8.1'])
    expect(served(`extra.${fqdn}`, 'TXT')).toEqual([])
    expect(served(`ghost.${zone}`, 'A')).toEqual([])
    expect(served(`deep.ghost2.${zone}`, 'MX')).toEqual([])
    expect(served(`www.${zone}`, 'A')).toEqual(['9.9.9.9'])
    expect(served(`_acme-challenge.${zone}`, 'TXT')).toEqual(['"operator"'])
    expect(served(zone, 'TXT')).toEqual(['"apex"'])
    expect(served(other.fqdn, 'A')).toEqual(['1.2.8.7'])

    const metrics = await metricsRegistryOf(app)!.getSingleMetricAsString(
      'dns_manager_upstream_repairs_total',
    )
    const count = (action: string) => result.repaired.filter((r) => r.action === action).length
    expect(metrics).toContain(
      `dns_manager_upstream_repairs_total{source="anti_entropy",action="replace",service="dns-manager"} ${count('replace')}`,
    )
    expect(metrics).toContain(
      `dns_manager_upstream_repairs_total{source="anti_entropy",action="delete",service="dns-manager"} ${count('delete')}`,
    )
    // A second pass finds nothing left to repair.
    expect((await useCases.reconcileUpstream()).repaired).toEqual([])
  })

  it('when two replicas run the anti-entropy job at once, then only one of them works; the other skips', async () => {
    const { useCases } = await setup({ timeoutMs: 1500 })
    const second = buildApp(deps, { provider: realProvider(1500), env: { PROVIDER_TIMEOUT_MS: '1500' } })
    pdns.freeze() // the first pass holds the lease while it waits for PowerDNS
    const firstRun = useCases.reconcileUpstream()
    await new Promise((r) => setTimeout(r, 300))
    const secondRun = await second.useCases.reconcileUpstream()
    pdns.thaw()
    expect(secondRun.skipped).toBe('another replica')
    const firstResult = await firstRun
    expect(firstResult.skipped).toBeUndefined()
    // The lease is given back at the end of a pass.
    expect((await second.useCases.reconcileUpstream()).skipped).toBeUndefined()
  })

  it('when PowerDNS is frozen under many writes, then no database lock or connection is held across the calls: other requests on the subdomain answer at once', async () => {
    const { app, a, id } = await setup({ timeoutMs: 3000 })
    pdns.freeze()
    // More writes than the pool has connections (10), all waiting for the upstream at once.
    const writes: Array<Promise<number>> = []
    for (let i = 0; i < 14; i++) {
      writes.push(
        addRecord(app, a, id, { type: 'A', name: `w${i}`, content: `1.2.9.${i + 1}` }).then((r) => r.status),
      )
      await new Promise((r) => setTimeout(r, 40))
    }
    await new Promise((r) => setTimeout(r, 300))
    // The subdomain's row lock is free (a renewal takes it) and the pool has connections left.
    const renew = await request(app).post(`/rest/subdomains/${id}/renew`).set(a.headers)
    expect(renew.status).toBe(422)
    expect(renew.body.error.code).toBe('renewal_not_yet_available')
    await request(app).get('/rest/quota').set(a.headers).expect(200)
    await request(app).get(`/rest/subdomains/${id}/records`).set(a.headers).expect(200)
    expect(await Promise.all(writes)).toEqual(Array(14).fill(502))
    pdns.thaw()
  })

  it('when many records are written at one name at once, then DNS serves exactly what the API lists', async () => {
    const { app, a, id, fqdn } = await setup({ timeoutMs: 3000 })
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        addRecord(app, a, id, { type: 'A', name: 'many', content: `1.2.10.${i + 1}` }).then((r) => r.status),
      ),
    )
    expect(statuses).toEqual(Array(8).fill(201))
    expect(served(`many.${fqdn}`, 'A')).toEqual(await listed(app, a, id, 'many', 'A'))
    expect(served(`many.${fqdn}`, 'A')).toHaveLength(8)
  })
})
