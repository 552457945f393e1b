import type { Pool } from 'undici'
import type { Sample } from '../load.ts'
import type { FaultStack } from '../stack.ts'
import { burst, call, json, type Kit, readinessProbe, uniqueId } from './common.ts'

interface UsageResult {
  id: string
  status: 'accepted' | 'duplicate' | 'rejected'
}

/**
 * The usage ledger as the client knows it: every event sent (id → amount in µUSD) and those a
 * 200 acknowledged (accepted, or a duplicate of one recorded before).
 */
class UsageLedger {
  readonly sent = new Map<string, number>()
  readonly acked = new Set<string>()

  constructor(readonly keyHash: string) {}

  batch(size: number): { body: string; ids: string[] } {
    const events = Array.from({ length: size }, () => {
      const id = uniqueId('ev')
      const micros = 1 + Math.floor(Math.random() * 999_999)
      this.sent.set(id, micros)
      return { id, key_hash: this.keyHash, amount: micros / 1e6 }
    })
    return { body: json({ events }), ids: events.map((e) => e.id) }
  }

  /** Records what a 200 acknowledged; true when the whole batch was. */
  record(sample: Sample): boolean {
    if (sample.status !== 200) return false
    const results = ((sample.body as { data?: { results?: UsageResult[] } })?.data?.results ??
      []) as UsageResult[]
    let all = results.length > 0
    for (const r of results) {
      if (r.status === 'accepted' || r.status === 'duplicate') this.acked.add(r.id)
      else all = false
    }
    return all
  }
}

export async function keyInfoKit(stack: FaultStack): Promise<Kit> {
  const service = stack.services['key-info']
  const admin = await service.cli<{ key: string; hash: string }>(
    'keys:create',
    '--name',
    'faults admin',
    '--management',
  )
  const adminAuth = { authorization: `Bearer ${admin.key}` }
  const created = await call<{ key: string; data: { hash: string } }>(`${service.url}/api/v1/keys`, {
    headers: adminAuth,
    body: { name: 'faults subject' },
  })
  if (created.status !== 201)
    throw new Error(`key-info: creating a key failed: ${JSON.stringify(created.body)}`)
  const subject = { key: created.body.key, hash: created.body.data.hash }
  const ledger = new UsageLedger(subject.hash)
  const usageRequest = (size: number) => {
    const { body, ids } = ledger.batch(size)
    return {
      method: 'POST' as const,
      path: '/api/v1/usage',
      headers: { ...adminAuth, 'content-type': 'application/json' },
      body,
      context: ids,
    }
  }

  return {
    name: 'key-info',
    service,
    probes: [
      {
        name: 'GET /api/v1/key',
        everyMs: 200,
        next: () => ({
          method: 'GET',
          path: '/api/v1/key',
          headers: { authorization: `Bearer ${subject.key}` },
        }),
        ok: (s) =>
          s.status === 200 && typeof (s.body as { data?: { label?: unknown } })?.data?.label === 'string',
        // A record cached under a Redis token may answer while Postgres is out (KEY_CACHE_MAX_AGE_MS).
        needs: { postgres: 'optional', redis: 'none' },
        envelope: 'key-info',
      },
      {
        name: 'POST /api/v1/usage',
        everyMs: 250,
        next: () => usageRequest(2),
        ok: (s) => s.status === 200 && (s.body as { data?: { rejected?: number } })?.data?.rejected === 0,
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'key-info',
        onSample: (s) => void ledger.record(s),
      },
      {
        name: 'GET /api/v1/keys',
        everyMs: 500,
        next: () => ({ method: 'GET', path: '/api/v1/keys?limit=5', headers: adminAuth }),
        ok: (s) => s.status === 200 && Array.isArray((s.body as { data?: unknown })?.data),
        needs: { postgres: 'required', redis: 'none' },
        envelope: 'key-info',
      },
      readinessProbe({ postgres: 'required', redis: 'optional' }),
    ],
    writeBurst: (pool: Pool) =>
      burst(
        pool,
        'key-info',
        'POST /api/v1/usage (burst)',
        4,
        () => usageRequest(5),
        (s) => ledger.record(s),
      ),

    async invariants() {
      const problems: string[] = []
      const stored = new Map(
        (
          await stack.postgres.query<{ id: string; amount_micros: string }>(
            'SELECT id, amount_micros FROM key_info.usage_event WHERE key_hash = $1',
            [subject.hash],
          )
        ).map((r) => [r.id, Number(r.amount_micros)]),
      )
      const missing = [...ledger.acked].filter((id) => !stored.has(id))
      if (missing.length)
        problems.push(
          `${missing.length} acknowledged usage events are not stored (e.g. ${missing.slice(0, 3).join(', ')})`,
        )
      const strange = [...stored].filter(([id, micros]) => ledger.sent.get(id) !== micros)
      if (strange.length) problems.push(`${strange.length} stored events were never sent as stored`)
      const sum = (values: Iterable<number>) => [...values].reduce((a, b) => a + b, 0)
      const storedSum = sum(stored.values())
      const [key] = await stack.postgres.query<{ usage_micros: string }>(
        'SELECT usage_micros FROM key_info.api_key WHERE hash = $1',
        [subject.hash],
      )
      const [daily] = await stack.postgres.query<{ total: string | null }>(
        'SELECT sum(usage_micros) AS total FROM key_info.api_key_daily_usage WHERE key_hash = $1',
        [subject.hash],
      )
      if (Number(key?.usage_micros) !== storedSum)
        problems.push(`api_key.usage_micros ${key?.usage_micros} ≠ the sum of its events ${storedSum}`)
      if (Number(daily?.total ?? 0) !== storedSum)
        problems.push(`the daily rollups sum to ${daily?.total} ≠ the sum of the events ${storedSum}`)

      // A client retries what was not acknowledged (event ids make that safe): then the
      // totals are exactly what was sent, each event counted once.
      const unacked = [...ledger.sent.keys()].filter((id) => !ledger.acked.has(id))
      for (let i = 0; i < unacked.length; i += 1000) {
        const events = unacked
          .slice(i, i + 1000)
          .map((id) => ({ id, key_hash: subject.hash, amount: ledger.sent.get(id)! / 1e6 }))
        const retry = await call<{ data?: { results?: UsageResult[] } }>(`${service.url}/api/v1/usage`, {
          headers: adminAuth,
          body: { events },
        })
        const bad = (retry.body.data?.results ?? []).filter((r) => r.status === 'rejected')
        if (retry.status !== 200 || bad.length)
          problems.push(
            `retrying unacknowledged events: ${retry.status} ${JSON.stringify(retry.body).slice(0, 200)}`,
          )
      }
      const sentSum = sum(ledger.sent.values())
      const after = await call<{ data?: { usage?: number } }>(`${service.url}/api/v1/keys/${subject.hash}`, {
        headers: adminAuth,
      })
      const usage = Math.round((after.body.data?.usage ?? NaN) * 1e6)
      if (usage !== sentSum)
        problems.push(
          `after retrying, the key's usage is ${usage} µUSD ≠ ${sentSum} µUSD sent (${ledger.sent.size} events)`,
        )
      return problems
    },
  }
}
