import { fixedClock } from '@quartet/core/clock'
import { request } from '@quartet/core/testing'
import type { DnsProvider } from '../../src/domain/provider.ts'
import { databaseProvider } from '../../src/providers/database.ts'
import { addZone, buildApp, createAccount, unique, useDeps } from '../helpers.ts'

const deps = useDeps()

/**
 * A write slower than PENDING_TIMEOUT_MS (a stalling database or upstream): the reconcile job
 * rolls it back while the write is still under way. The write must not then answer as if it had
 * been kept, nor leave DNS serving what the database no longer holds.
 */
describe('a record write the reconcile job rolled back while it was slow', () => {
  it('when the write ends after the rollback, then it answers 503 with Retry-After, the API lists nothing, and DNS serves nothing', async () => {
    const real = databaseProvider()
    let stall: (() => Promise<void>) | null = null
    const provider: DnsProvider = {
      ...real,
      kind: real.kind,
      applyRRsets: async (zone, rrsets) => {
        const hook = stall
        stall = null
        const applied = await real.applyRRsets(zone, rrsets)
        if (hook) await hook()
        return applied
      },
    }
    const clock = fixedClock(new Date('2026-11-24T06:00:00Z'))
    const { app, useCases } = buildApp(deps, { provider, clock, env: { PENDING_TIMEOUT_MS: '1000' } })
    const a = await createAccount(deps)
    const zone = `${unique('sw')}.test`
    await addZone(deps, zone)
    const s = await request(app)
      .post('/rest/subdomains')
      .set(a.headers)
      .send({ subdomain: 'host', rootdomain: zone })
      .expect(201)
    const id = s.body.subdomain.id as number

    // While the upstream call is under way, time passes and the reconcile job runs.
    stall = async () => {
      clock.advance(5_000)
      const result = await useCases.reconcilePending()
      expect(result.rolled_back).toHaveLength(1)
    }
    const res = await request(app)
      .post(`/rest/subdomains/${id}/records`)
      .set(a.headers)
      .send({ type: 'A', name: '@', content: '1.2.8.1' })
    expect(res.status).toBe(503)
    expect(res.body.error.code).toBe('service_unavailable')
    expect(res.headers['retry-after']).toBe('5')

    const listed = await request(app).get(`/rest/subdomains/${id}/records`).set(a.headers).expect(200)
    expect(listed.body.dns_records).toEqual([])
    const served = (await real.listRRsets(zone)) ?? []
    expect(served.filter((r) => r.type === 'A')).toEqual([])
  })
})
