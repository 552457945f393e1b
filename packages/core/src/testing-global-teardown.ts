import type { EmbeddedPostgres } from './embedded-postgres.ts'

export default async function globalTeardown(): Promise<void> {
  const holder = globalThis as { __quartetEmbeddedPg?: EmbeddedPostgres }
  await holder.__quartetEmbeddedPg?.stop()
  holder.__quartetEmbeddedPg = undefined
}
