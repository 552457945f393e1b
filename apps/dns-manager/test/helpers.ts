import path from 'node:path'
import type { Clock } from '@quartet/core/clock'
import { createLogger } from '@quartet/core/log'
import { silentLogger, type TestDeps, useTestDeps } from '@quartet/core/testing'
import type { Express } from 'express'
import { buildDnsManager, type DnsManager } from '../src/app.ts'
import { loadAppConfig, type TConfig } from '../src/config.ts'
import type { DnsProvider } from '../src/domain/provider.ts'
import { issueCredential } from '../src/domain/use-cases.ts'
import { createDb, type Db } from '../src/store/db.ts'
import { createRepository } from '../src/store/repository.ts'

export const migrationsDir = path.join(__dirname, '../prisma/migrations')

export function useDeps(): TestDeps<Db> {
  return useTestDeps({ migrationsDir, prefix: 'dns', createDb })
}

/** The app's config as the service would load it, pointed at the test schema. */
export function testConfig(deps: TestDeps<Db>, env: Record<string, string> = {}): TConfig {
  return loadAppConfig({
    DATABASE_URL: deps.database.url,
    DATABASE_SCHEMA: deps.database.schema,
    LOG_LEVEL: 'silent',
    ...env,
  })
}

export function buildApp(
  deps: TestDeps<Db>,
  options: { env?: Record<string, string>; provider?: DnsProvider; clock?: Clock } = {},
): DnsManager {
  return buildDnsManager({
    config: testConfig(deps, options.env),
    logger: process.env.DEBUG_LOG ? createLogger({ name: 'test', level: 'error' }) : silentLogger(),
    db: deps.db,
    kv: deps.kv,
    ...(options.provider ? { provider: options.provider } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  })
}

let counter = 0
export const unique = (prefix: string) =>
  `${prefix}${Date.now().toString(36)}${(counter++).toString(36)}${Math.random().toString(36).slice(2, 6)}`

export interface TestAccount {
  accountId: string
  apiKey: string
  apiSecret: string
  headers: Record<string, string>
}

/** A fresh account with one API key (what `cli accounts:create` does). */
export async function createAccount(
  deps: TestDeps<Db>,
  options: { quota?: number; balanceCents?: number; allowList?: string[]; apiAccess?: boolean } = {},
): Promise<TestAccount> {
  const repo = createRepository(deps.db, deps.database.schema)
  const c = issueCredential('dnsm_')
  const account = await repo.createAccount({
    email: `${unique('u')}@example.test`,
    quotaTotal: options.quota ?? 5,
    balanceCents: options.balanceCents ?? 0,
    apiAccessEnabled: options.apiAccess ?? true,
    ipAllowList: options.allowList ?? [],
    credential: c.stored,
  })
  return {
    accountId: account.id,
    apiKey: c.apiKey,
    apiSecret: c.apiSecret,
    headers: { 'X-API-Key': c.apiKey, 'X-API-Secret': c.apiSecret },
  }
}

export async function addZone(
  deps: TestDeps<Db>,
  name: string,
  priceCents = 0,
  termYears = 1,
): Promise<void> {
  await createRepository(deps.db, deps.database.schema).upsertZone({ name, priceCents, termYears })
}

export type { Express }
