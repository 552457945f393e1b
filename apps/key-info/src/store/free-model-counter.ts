import type { KeyValueStore } from '@quartet/core/kv'
import type { FreeModelCounter } from '../domain/ports.ts'

/** The kv key of a key's free-model mirror for a UTC day. */
export const freeModelKvKey = (keyHash: string, day: string) => `free-model:${keyHash}:${day}`

/** A mirror's value as a count; null when absent or not a count. */
export function parseFreeModelCount(value: string | null): number | null {
  const n = value === null ? NaN : Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

/**
 * kv mirror of the per-key, per-UTC-day free-model totals committed to Postgres. It is only ever
 * set to a committed total and only raised, so it can neither inflate a count nor, when lost,
 * reset one (readers take the larger of it and the Postgres rollup).
 */
export function createFreeModelCounter(kv: KeyValueStore): FreeModelCounter {
  return {
    async read(keyHash, day) {
      return parseFreeModelCount(await kv.get(freeModelKvKey(keyHash, day)))
    },
    async raise(keyHash, day, total, ttlMs) {
      const key = freeModelKvKey(keyHash, day)
      const current = Number((await kv.get(key)) ?? -1)
      if (!(current >= total)) await kv.set(key, String(total), ttlMs)
    },
  }
}
