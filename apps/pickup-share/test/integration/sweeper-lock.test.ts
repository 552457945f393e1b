import { itWhen } from '@quartet/core/testing'
import pg from 'pg'
import { SWEEP_LOCK_ID, withAdvisoryLock } from '../../src/store/lock-repository.ts'
import { testDeps } from '../support/harness.ts'

const deps = testDeps()
// The embedded Postgres is a single session, in which advisory locks are re-entrant: the
// exclusion between replicas can only be shown against a real server.
const realPostgres = { postgresServer: true }

describe('sweeper lock', () => {
  it('when nobody holds the lock, then the sweep runs and returns its result', async () => {
    expect(await withAdvisoryLock(deps.db, SWEEP_LOCK_ID + 1, async () => 'swept')).toBe('swept')
  })
  itWhen(realPostgres, 'when another replica holds the lock, then this one skips the sweep', async () => {
    const other = new pg.Client({ connectionString: deps.database.url })
    await other.connect()
    try {
      await other.query('SELECT pg_advisory_lock($1::bigint)', [SWEEP_LOCK_ID + 2])
      const fn = jest.fn(async () => 'swept')
      expect(await withAdvisoryLock(deps.db, SWEEP_LOCK_ID + 2, fn)).toBeNull()
      expect(fn).not.toHaveBeenCalled()
      await other.query('SELECT pg_advisory_unlock($1::bigint)', [SWEEP_LOCK_ID + 2])
      expect(await withAdvisoryLock(deps.db, SWEEP_LOCK_ID + 2, fn)).toBe('swept')
    } finally {
      await other.end()
    }
  })
})
