import type { Operation } from './operation.ts'
import { accountOperations } from './operations/account.ts'
import { acmeOperations } from './operations/acme.ts'
import { recordOperations } from './operations/dns-records.ts'
import { keyOperations } from './operations/keys.ts'
import { subdomainOperations } from './operations/subdomains.ts'
import { systemOperations } from './operations/system.ts'

/** The one operation registry every call style serves. */
export const operations: readonly Operation[] = [
  ...accountOperations,
  ...subdomainOperations,
  ...recordOperations,
  ...systemOperations,
  ...keyOperations,
  ...acmeOperations,
]

export const operationsByName = new Map(operations.map((op) => [op.name, op]))
