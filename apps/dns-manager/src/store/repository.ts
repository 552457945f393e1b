import { pingDatabase } from '@quartet/core/db'
import type { Stores } from '../domain/ports.ts'
import { createAccountRepository } from './account-repository.ts'
import { createAuditRepository } from './audit-repository.ts'
import { createCredentialRepository } from './credential-repository.ts'
import type { Db } from './db.ts'
import { createRecordRepository } from './record-repository.ts'
import { createSubdomainRepository } from './subdomain-repository.ts'
import { createUpstreamStateRepository } from './upstream-state-repository.ts'
import { createZoneRepository } from './zone-repository.ts'
import { createLeaseRepository } from './lease-repository.ts'
import { createPeopleRepository } from './people-repository.ts'

export type {
  AccountRow,
  CredentialRow,
  RecordFields,
  RecordRow,
  RecordState,
  SubdomainRow,
  ZoneRow,
} from '../domain/ports.ts'

/**
 * Every repository of dns-manager over one database (the domain's ports, domain/ports.ts). Only
 * this folder imports Prisma; everything returns plain objects.
 */
export function createRepository(db: Db, schema: string): Stores {
  return {
    ping: () => pingDatabase(db),
    ...createAccountRepository(db, schema),
    ...createCredentialRepository(db, schema),
    ...createZoneRepository(db),
    ...createSubdomainRepository(db, schema),
    ...createRecordRepository(db, schema),
    ...createUpstreamStateRepository(db, schema),
    ...createLeaseRepository(db, schema),
    ...createAuditRepository(db),
    ...createPeopleRepository(db, schema),
  }
}

export type Repository = Stores
