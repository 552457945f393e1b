import type { DnsOperation } from './define.ts'
import { accountOperations } from './operations/account.ts'
import { acmeOperations } from './operations/acme.ts'
import { recordOperations } from './operations/dns-records.ts'
import { keyOperations } from './operations/keys.ts'
import { subdomainOperations } from './operations/subdomains.ts'
import { systemOperations } from './operations/system.ts'

/** dns-manager's API operations, each served as REST, JSON-RPC and GraphQL from its one definition. */
export const dnsOperations: readonly DnsOperation[] = [
  ...accountOperations,
  ...subdomainOperations,
  ...recordOperations,
  ...systemOperations,
  ...keyOperations,
  ...acmeOperations,
]

export const operationsByName = new Map(dnsOperations.map((op) => [op.name, op]))
