import type { z } from 'zod'
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

/** Every definition with its own name, argument and output types (for typed clients). */
type Defined =
  | (typeof accountOperations)[number]
  | (typeof subdomainOperations)[number]
  | (typeof recordOperations)[number]
  | (typeof systemOperations)[number]
  | (typeof keyOperations)[number]
  | (typeof acmeOperations)[number]

export type OperationName = Defined['name']
type Named<N extends OperationName> = Extract<Defined, { name: N }>
/** The flat arguments an operation takes (JSON-RPC params, the back office's `op` body). */
export type ArgsOf<N extends OperationName> = z.input<Named<N>['args']>
/** What an operation answers (the JSON-RPC result; REST adds `success: true`). */
export type ResultOf<N extends OperationName> = z.output<Named<N>['output']>
