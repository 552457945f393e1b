import type { KeyValueStore } from '@quartet/core/kv'
import type { FreeModelCounter } from '../domain/ports.ts'

const keyOf = (keyHash: string, day: string) => `free-model:${keyHash}:${day}`

/**
 * kv mirror of the per-key, per-UTC-day free-model totals committed to Postgres. It is only ever
 * set to a committed total and only raised, so it can neither inflate a count nor, when lost,
 * reset one (readers take the larger of it and the Postgres rollup).
 */
export function createFreeModelCounter(kv: KeyValueStore): FreeModelCounter {
  return {
    async read(keyHash, day) {
      const value = await kv.get(keyOf(keyHash, day))
      const n = value === null ? NaN : Number(value)
      return Number.isSafeInteger(n) && n >= 0 ? n : null
    },
    async raise(keyHash, day, total, ttlMs) {
      const key = keyOf(keyHash, day)
      const current = Number((await kv.get(key)) ?? -1)
      if (!(current >= total)) await kv.set(key, String(total), ttlMs)
    },
  }
}
