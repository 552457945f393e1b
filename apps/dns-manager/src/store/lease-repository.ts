import { quoteIdent } from '@quartet/core/db'
import type { LeaseStore } from '../domain/ports.ts'
import type { Db } from './db.ts'

/** Leases in Postgres, timed by the database's clock so that replicas with skewed clocks agree. */
export function createLeaseRepository(db: Db, schema: string): LeaseStore {
  const table = `${quoteIdent(schema)}."job_lease"`
  return {
    async acquireLease(name, holder, ttlMs) {
      const rows = await db.$queryRawUnsafe<unknown[]>(
        `INSERT INTO ${table} (name, holder, expires_at)
         VALUES ($1, $2, now() + $3::int * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
          WHERE ${table}.expires_at < now() OR ${table}.holder = EXCLUDED.holder
         RETURNING holder`,
        name,
        holder,
        Math.round(ttlMs),
      )
      return rows.length === 1
    },
    async releaseLease(name, holder) {
      await db.jobLease.deleteMany({ where: { name, holder } })
    },
  }
}
