import type { DnsProvider } from '../domain/provider.ts'

/** No upstream: records live in Postgres only, and the zone export serves them as a BIND file. */
export function databaseProvider(): DnsProvider {
  return { kind: 'database', applyRRsets: async () => {}, listRRsets: async () => null }
}
