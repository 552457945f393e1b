import type { TConfig } from '../config.ts'
import type { DnsProvider } from '../domain/provider.ts'
import { cloudflareProvider } from './cloudflare.ts'
import { databaseProvider } from './database.ts'
import { powerDnsProvider } from './powerdns.ts'

/** The provider named by DNS_PROVIDER, with its connection settings. */
export function createProvider(config: TConfig): DnsProvider {
  switch (config.DNS_PROVIDER) {
    case 'database':
      return databaseProvider()
    case 'powerdns':
      return powerDnsProvider({
        apiUrl: config.PDNS_API_URL,
        apiKey: config.PDNS_API_KEY,
        serverId: config.PDNS_SERVER_ID,
        timeoutMs: config.PROVIDER_TIMEOUT_MS,
      })
    case 'cloudflare':
      return cloudflareProvider({
        apiUrl: config.CLOUDFLARE_API_URL,
        token: config.CLOUDFLARE_API_TOKEN,
        timeoutMs: config.PROVIDER_TIMEOUT_MS,
      })
  }
}
