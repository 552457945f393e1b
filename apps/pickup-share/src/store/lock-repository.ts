import type { Db } from './db.ts'

/** The sweeper's advisory lock id ("pshare" in ASCII): one replica sweeps at a time. */
export const SWEEP_LOCK_ID = 0x707368617265

/**
 * Runs `fn` only if this process wins a Postgres advisory lock, held by a transaction for as long
 * as `fn` runs; replicas that lose return null at once instead of waiting.
 */
export async function withAdvisoryLock<T>(db: Db, lockId: number, fn: () => Promise<T>): Promise<T | null> {
  return db.$transaction(
    async (tx) => {
      const [row] = await tx.$queryRaw<
        Array<{ locked: boolean }>
      >`SELECT pg_try_advisory_xact_lock(${lockId}::bigint) AS locked`
      if (!row?.locked) return null
      return fn()
    },
    { timeout: 30 * 60_000, maxWait: 10_000 },
  )
}
