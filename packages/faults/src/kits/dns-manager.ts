import type { Pool } from 'undici'
import type { RequestSpec, Sample } from '../load.ts'
import { sleep } from '../sandbox.ts'
import type { FaultStack } from '../stack.ts'
import { burst, call, json, type Kit, readinessProbe, uniqueId } from './common.ts'

const ZONE = 'faults.example'
const PRICE_CENTS = 1
const START_BALANCE_CENTS = 1_000_000

interface RecordRow {
  id: number
  content: string
}

/**
 * dns-manager with the `database` provider: one account and zone made with its CLI, a
 * subdomain to write records under. Writes tracked: TXT record creates (content → id once
 * acknowledged) and subdomain creates (each charges the zone price).
 */
export async function dnsManagerKit(stack: FaultStack): Promise<Kit> {
  const service = stack.services['dns-manager']
  const account = await service.cli<{ account_id: string; api_key: string; api_secret: string }>(
    'accounts:create',
    '--email',
    'faults@example.org',
    '--quota',
    '100000',
    '--balance-cents',
    String(START_BALANCE_CENTS),
  )
  await service.cli('zones:add', ZONE, '--price-cents', String(PRICE_CENTS), '--term-years', '1')
  const auth = { 'x-api-key': account.api_key, 'x-api-secret': account.api_secret }
  const jsonAuth = { ...auth, 'content-type': 'application/json' }
  const home = await call<{ subdomain: { id: number } }>(`${service.url}/rest/subdomains`, {
    headers: auth,
    body: { subdomain: `rec-${uniqueId('s').replaceAll('-', '')}`.slice(0, 60), rootdomain: ZONE },
  })
  if (home.status !== 201)
    throw new Error(`dns-manager: creating a subdomain failed: ${JSON.stringify(home.body)}`)
  // Records go to the newest subdomain, a few each (as real zones hold), not thousands under
  // one: every create reads its subdomain's records, so one huge subdomain would make a soak
  // measure that rather than memory.
  let newest = home.body.subdomain.id
  const touched = new Set<number>([newest])

  const records = { sent: new Map<string, number>(), acked: new Map<string, number>() }
  const labels = { sent: new Set<string>([]), acked: new Set<string>() }
  const recordCreate = (): RequestSpec => {
    const content = uniqueId('txt')
    records.sent.set(content, newest)
    touched.add(newest)
    return {
      method: 'POST',
      path: `/rest/subdomains/${newest}/records`,
      headers: jsonAuth,
      body: json({ type: 'TXT', name: '@', content }),
      context: content,
    }
  }
  const recordAcked = (s: Sample) => {
    const id = (s.body as { dns_record?: { id?: number } })?.dns_record?.id
    if (s.status !== 201 || typeof id !== 'number') return false
    records.acked.set(s.context as string, id)
    return true
  }
  const subdomainCreate = (): RequestSpec => {
    const label = `f${uniqueId('').replaceAll('-', '')}`
    labels.sent.add(label)
    return {
      method: 'POST',
      path: '/rest/subdomains',
      headers: jsonAuth,
      body: json({ subdomain: label, rootdomain: ZONE }),
      context: label,
    }
  }
  const subdomainAcked = (s: Sample) => {
    if (s.status !== 201) return false
    labels.acked.add(s.context as string)
    const id = (s.body as { subdomain?: { id?: number } })?.subdomain?.id
    if (typeof id === 'number' && id > newest) newest = id
    return true
  }
  const restOk = (status: number) => (s: Sample) =>
    s.status === status && (s.body as { success?: boolean })?.success === true

  /** Every page of a REST list. */
  async function listAll<T>(path: string, field: string): Promise<T[]> {
    const out: T[] = []
    let cursor: string | null = null
    do {
      const page: { status: number; body: Record<string, unknown> } = await call<Record<string, unknown>>(
        `${service.url}${path}${path.includes('?') ? '&' : '?'}per_page=500${cursor ? `&cursor=${cursor}` : ''}`,
        { headers: auth },
      )
      if (page.status !== 200) throw new Error(`GET ${path}: ${page.status} ${JSON.stringify(page.body)}`)
      out.push(...(page.body[field] as T[]))
      cursor = (page.body.next_cursor as string | null) ?? null
    } while (cursor)
    return out
  }

  return {
    name: 'dns-manager',
    service,
    probes: [
      {
        name: 'GET /rest/quota',
        everyMs: 300,
        next: () => ({ method: 'GET', path: '/rest/quota', headers: auth }),
        ok: restOk(200),
        // A quota kept in the views cache under a Redis token answers while Postgres is out: no
        // write can commit then, so it is still the account's (PRINCIPAL_CACHE_MAX_AGE_MS at most).
        needs: { postgres: 'optional', redis: 'none' },
        envelope: 'dns-rest',
      },
      {
        name: 'POST /rest/subdomains/:id/records',
        everyMs: 300,
        next: recordCreate,
        ok: restOk(201),
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'dns-rest',
        onSample: (s) => void recordAcked(s),
      },
      {
        name: 'POST /rest/subdomains',
        everyMs: 500,
        next: subdomainCreate,
        ok: restOk(201),
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'dns-rest',
        onSample: (s) => void subdomainAcked(s),
      },
      {
        name: 'POST /rpc quota.get',
        everyMs: 500,
        next: () => ({
          method: 'POST',
          path: '/rpc',
          headers: jsonAuth,
          body: json({ jsonrpc: '2.0', method: 'quota.get', id: 1 }),
        }),
        ok: (s) => s.status === 200 && (s.body as { result?: unknown })?.result !== undefined,
        // A quota kept in the views cache under a Redis token answers while Postgres is out: no
        // write can commit then, so it is still the account's (PRINCIPAL_CACHE_MAX_AGE_MS at most).
        needs: { postgres: 'optional', redis: 'none' },
        envelope: 'dns-rpc',
      },
      {
        name: 'POST /graphql quota',
        everyMs: 500,
        next: () => ({
          method: 'POST',
          path: '/graphql',
          headers: jsonAuth,
          body: json({ query: '{ quota { quota { used total } balance_cents } }' }),
        }),
        ok: (s) =>
          s.status === 200 &&
          !(s.body as { errors?: unknown })?.errors &&
          (s.body as { data?: { quota?: unknown } })?.data?.quota != null,
        // A quota kept in the views cache under a Redis token answers while Postgres is out: no
        // write can commit then, so it is still the account's (PRINCIPAL_CACHE_MAX_AGE_MS at most).
        needs: { postgres: 'optional', redis: 'none' },
        envelope: 'dns-graphql',
      },
      readinessProbe({ postgres: 'required', redis: 'optional' }),
    ],
    writeBurst(pool: Pool) {
      const recordsBurst = burst(pool, 'dns-manager', 'POST records (burst)', 4, recordCreate, recordAcked)
      const subdomainsBurst = burst(
        pool,
        'dns-manager',
        'POST subdomains (burst)',
        1,
        subdomainCreate,
        subdomainAcked,
      )
      return {
        stop: async () => void (await Promise.all([recordsBurst.stop(), subdomainsBurst.stop()])),
        acknowledged: () => recordsBurst.acknowledged() + subdomainsBurst.acknowledged(),
      }
    },

    async invariants() {
      const problems: string[] = []
      // A write a crash left pending is rolled back by the reconcile job after PENDING_TIMEOUT_MS.
      let pending = -1
      for (let i = 0; i < 40; i++) {
        const [row] = await stack.postgres.query<{ n: string }>(
          "SELECT count(*) AS n FROM dns_manager.dns_record WHERE state <> 'active'",
        )
        pending = Number(row?.n)
        if (pending === 0) break
        await sleep(250)
      }
      if (pending !== 0) problems.push(`${pending} DNS records are still pending 10 s after the writes`)

      const listed: RecordRow[] = []
      for (const sid of touched)
        listed.push(...(await listAll<RecordRow>(`/rest/subdomains/${sid}/records`, 'dns_records')))
      const byContent = new Map(listed.map((r) => [r.content, r.id]))
      const lost = [...records.acked].filter(([content, id]) => byContent.get(content) !== id)
      if (lost.length)
        problems.push(
          `${lost.length} acknowledged records are not listed (e.g. ${lost
            .slice(0, 3)
            .map((l) => l[0])
            .join(', ')})`,
        )
      const unknown = listed.filter((r) => !records.sent.has(r.content))
      if (unknown.length) problems.push(`${unknown.length} listed records were never sent`)
      const [rows] = await stack.postgres.query<{ n: string }>(
        'SELECT count(*) AS n FROM dns_manager.dns_record WHERE subdomain_id = ANY($1)',
        [[...touched]],
      )
      if (Number(rows?.n) !== listed.length)
        problems.push(`the API lists ${listed.length} records, the table holds ${rows?.n}`)

      const subdomains = await listAll<{ subdomain: string }>('/rest/subdomains', 'subdomains')
      const names = new Set(subdomains.map((s) => s.subdomain))
      const lostLabels = [...labels.acked].filter((l) => !names.has(l))
      if (lostLabels.length) problems.push(`${lostLabels.length} acknowledged subdomains are not listed`)
      const quota = await call<{ quota: { used: number }; balance_cents: number }>(
        `${service.url}/rest/quota`,
        {
          headers: auth,
        },
      )
      if (quota.body.quota?.used !== subdomains.length)
        problems.push(`quota.used ${quota.body.quota?.used} ≠ ${subdomains.length} subdomains listed`)
      const expected = START_BALANCE_CENTS - PRICE_CENTS * subdomains.length
      if (quota.body.balance_cents !== expected)
        problems.push(
          `balance ${quota.body.balance_cents} cents ≠ ${START_BALANCE_CENTS} − ${PRICE_CENTS} × ${subdomains.length} subdomains = ${expected}`,
        )
      return problems
    },
  }
}
