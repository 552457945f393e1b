import { startEmbeddedPostgres } from './embedded-postgres.ts'

/**
 * jest globalSetup: with no DATABASE_URL, start an in-memory embedded Postgres for this run and
 * hand its URL to the workers through the environment. With DATABASE_URL set (CI), use that server.
 */
export default async function globalSetup(): Promise<void> {
  if (process.env.DATABASE_URL) return
  const pg = await startEmbeddedPostgres({})
  process.env.DATABASE_URL = pg.url
  process.env.QUARTET_TEST_EMBEDDED_PG = '1'
  ;(globalThis as { __quartetEmbeddedPg?: typeof pg }).__quartetEmbeddedPg = pg
}
