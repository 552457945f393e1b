import type { FreeModelTotal, StoreOutcome, UsageEventInput, UsageStore } from '../domain/ports.ts'
import { keyTotalRefusal } from '../domain/usage.ts'
import { utcDay } from '../domain/windows.ts'
import type pg from 'pg'
import { type Db, rawOf } from './db.ts'

interface StoredRow {
  id: string
  key_hash: string
  amount_micros: string
  byok: boolean
  free_model: boolean
  occurred_at: Date
}

/**
 * The ledger. One transaction per batch; every writer first locks the batch's keys in hash order,
 * so batches that touch the same keys queue behind each other instead of deadlocking, and the
 * unique (workspace_id, id) decides which copy of a replayed event is counted.
 */
export function createUsageRepository(db: Db): UsageStore {
  const { pool, schema } = rawOf(db)
  return {
    async record(workspaceId, events) {
      const hashes = [...new Set(events.map((e) => e.keyHash))].sort()
      return inTransaction(pool, schema, async (tx) => {
        const { rows: owned } = await tx.query<{
          hash: string
          usage_micros: string
          byok_usage_micros: string
        }>(
          `SELECT hash, usage_micros, byok_usage_micros FROM api_key
             WHERE workspace_id = $1::uuid AND hash = ANY($2::text[])
             ORDER BY hash FOR UPDATE`,
          [workspaceId, hashes],
        )
        const before = new Map(
          owned.map((r) => [r.hash, { usage: BigInt(r.usage_micros), byok: BigInt(r.byok_usage_micros) }]),
        )
        const known = new Set(owned.map((r) => r.hash))
        const outcomes = new Map<string, StoreOutcome>()
        const candidates: UsageEventInput[] = []
        for (const e of events) {
          if (known.has(e.keyHash)) candidates.push(e)
          else outcomes.set(e.id, { kind: 'unknown_key' })
        }
        if (candidates.length === 0) return { outcomes, freeModelTotals: [] }

        const { rows: inserted } = await tx.query<{ id: string }>(
          `INSERT INTO usage_event (workspace_id, id, key_hash, amount_micros, byok, free_model, occurred_at)
             SELECT $1::uuid, e.id, e.key_hash, e.amount_micros, e.byok, e.free_model, e.occurred_at
             FROM unnest($2::text[], $3::text[], $4::bigint[], $5::boolean[], $6::boolean[], $7::timestamptz[])
               AS e(id, key_hash, amount_micros, byok, free_model, occurred_at)
             ON CONFLICT (workspace_id, id) DO NOTHING
             RETURNING id`,
          [
            workspaceId,
            candidates.map((e) => e.id),
            candidates.map((e) => e.keyHash),
            candidates.map((e) => e.amountMicros.toString()),
            candidates.map((e) => e.byok),
            candidates.map((e) => e.freeModel),
            candidates.map((e) => e.occurredAt.toISOString()),
          ],
        )
        const insertedIds = new Set(inserted.map((r) => r.id))

        const replayed = candidates.filter((e) => !insertedIds.has(e.id)).map((e) => e.id)
        if (replayed.length) {
          const { rows: stored } = await tx.query<StoredRow>(
            `SELECT id, key_hash, amount_micros, byok, free_model, occurred_at FROM usage_event
               WHERE workspace_id = $1::uuid AND id = ANY($2::text[])`,
            [workspaceId, replayed],
          )
          for (const r of stored)
            outcomes.set(r.id, {
              kind: 'exists',
              stored: {
                id: r.id,
                keyHash: r.key_hash,
                amountMicros: BigInt(r.amount_micros),
                byok: r.byok,
                freeModel: r.free_model,
                occurredAt: new Date(r.occurred_at),
              },
            })
        }

        // Roll the newly inserted events up per (key, UTC day) and per key.
        const daily = new Map<
          string,
          { keyHash: string; day: string; usage: bigint; byok: bigint; free: number }
        >()
        const totals = new Map<string, { usage: bigint; byok: bigint }>()
        for (const e of candidates) {
          if (!insertedIds.has(e.id)) continue
          outcomes.set(e.id, { kind: 'inserted' })
          const day = utcDay(e.occurredAt)
          const slot = daily.get(`${e.keyHash}/${day}`) ?? {
            keyHash: e.keyHash,
            day,
            usage: 0n,
            byok: 0n,
            free: 0,
          }
          const total = totals.get(e.keyHash) ?? { usage: 0n, byok: 0n }
          if (e.byok) {
            slot.byok += e.amountMicros
            total.byok += e.amountMicros
          } else {
            slot.usage += e.amountMicros
            total.usage += e.amountMicros
          }
          if (e.freeModel) slot.free += 1
          daily.set(`${e.keyHash}/${day}`, slot)
          totals.set(e.keyHash, total)
        }
        if (daily.size === 0) return { outcomes, freeModelTotals: [] }
        // Under the keys' locks: no batch in parallel can add to them before this one commits or
        // rolls back, so the limit holds exactly. Thrown, the refusal rolls the inserts back too.
        for (const [hash, added] of totals) {
          const was = before.get(hash)!
          const refusal =
            keyTotalRefusal(hash, 'usage', was.usage, was.usage + added.usage) ??
            keyTotalRefusal(hash, 'byok_usage', was.byok, was.byok + added.byok)
          if (refusal) throw refusal
        }

        const slots = [...daily.values()].sort((a, b) =>
          a.keyHash === b.keyHash ? a.day.localeCompare(b.day) : a.keyHash.localeCompare(b.keyHash),
        )
        const { rows: rolled } = await tx.query<{
          key_hash: string
          day: string
          free_model_requests: number
        }>(
          `INSERT INTO api_key_daily_usage AS d (key_hash, day, usage_micros, byok_usage_micros, free_model_requests)
           SELECT * FROM unnest($1::text[], $2::date[], $3::bigint[], $4::bigint[], $5::int[])
           ON CONFLICT (key_hash, day) DO UPDATE SET
             usage_micros = d.usage_micros + excluded.usage_micros,
             byok_usage_micros = d.byok_usage_micros + excluded.byok_usage_micros,
             free_model_requests = d.free_model_requests + excluded.free_model_requests
           RETURNING key_hash, to_char(day, 'YYYY-MM-DD') AS day, free_model_requests`,
          [
            slots.map((s) => s.keyHash),
            slots.map((s) => s.day),
            slots.map((s) => s.usage.toString()),
            slots.map((s) => s.byok.toString()),
            slots.map((s) => s.free),
          ],
        )

        const keys = [...totals.keys()].sort()
        await tx.query(
          `UPDATE api_key k SET
               usage_micros = k.usage_micros + t.usage,
               byok_usage_micros = k.byok_usage_micros + t.byok
             FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS t(hash, usage, byok)
             WHERE k.hash = t.hash`,
          [
            keys,
            keys.map((h) => totals.get(h)!.usage.toString()),
            keys.map((h) => totals.get(h)!.byok.toString()),
          ],
        )

        const freeModelTotals: FreeModelTotal[] = rolled
          .filter((r) => daily.get(`${r.key_hash}/${r.day}`)!.free > 0)
          .map((r) => ({ keyHash: r.key_hash, day: r.day, total: Number(r.free_model_requests) }))
        return { outcomes, freeModelTotals }
      })
    },
  }
}

/** BEGIN … COMMIT on one pooled connection, with the app's schema as search_path for its duration. */
async function inTransaction<T>(
  pool: pg.Pool,
  schema: string,
  work: (tx: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query(`SET LOCAL search_path TO ${schema}`)
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw err
  } finally {
    client.release()
  }
}
