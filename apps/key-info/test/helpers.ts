import path from 'node:path'
import { type Clock, fixedClock } from '@quartet/core/clock'
import { createLogger } from '@quartet/core/log'
import { silentLogger, useTestDeps } from '@quartet/core/testing'
import { createApp, type AppConfig } from '../src/app.ts'
import { createKey, type CreateKeyInput } from '../src/domain/keys.ts'
import { createDb } from '../src/store/db.ts'
import { createKeyRepository } from '../src/store/key-repository.ts'

export const migrationsDir = path.join(__dirname, '../prisma/migrations')

export const testConfig: AppConfig = {
  TRUST_PROXY: ['loopback'],
  BODY_LIMIT: '1mb',
  KEY_RATE_LIMIT_PER_MINUTE: 600,
  FREE_MODEL_DAILY_LIMIT: 1000,
  FREE_TIER_FREE_MODEL_DAILY_LIMIT: 50,
  KEY_CACHE_MAX_AGE_MS: 10_000,
}

/** A migrated schema of this file's own, the app's Prisma client and a kv store. */
export function useKeyInfoDeps() {
  return useTestDeps({ migrationsDir, prefix: 'keys', createDb })
}

type Deps = ReturnType<typeof useKeyInfoDeps>

/**
 * The app as production runs it with Redis: key records cached under kv version tokens (every
 * test below therefore also checks that no write leaves a stale record behind).
 */
export function buildApp(
  deps: Deps,
  options: { clock?: Clock; config?: Partial<AppConfig>; cacheKeyRecords?: boolean } = {},
) {
  return createApp({
    config: { ...testConfig, ...options.config },
    // KEY_INFO_TEST_LOG=error shows what a failing test's server logged.
    logger: process.env.KEY_INFO_TEST_LOG
      ? createLogger({ name: 'key-info-test', level: process.env.KEY_INFO_TEST_LOG })
      : silentLogger(),
    db: deps.db,
    kv: deps.kv,
    clock: options.clock,
    cacheKeyRecords: options.cacheKeyRecords ?? true,
  })
}

/** A fresh workspace; every test makes its own so nothing is shared. */
export async function newWorkspace(deps: Deps, name = 'ws'): Promise<string> {
  return createKeyRepository(deps.db).createWorkspace(name)
}

/** Mints a key straight through the domain (as the CLI does), in `workspaceId` or a new workspace. */
export async function mintKey(
  deps: Deps,
  input: Partial<CreateKeyInput> & { workspaceId?: string; clock?: Clock } = {},
): Promise<{ key: string; hash: string; workspaceId: string }> {
  const { workspaceId: given, clock, ...rest } = input
  const workspaceId = given ?? (await newWorkspace(deps))
  const created = await createKey(
    { keys: createKeyRepository(deps.db), clock: clock ?? fixedClock('2000-01-01T00:00:00Z') },
    { workspaceId, creatorUserId: 'test-user' },
    {
      name: 'test key',
      limitMicros: null,
      limitReset: null,
      includeByokInLimit: false,
      expiresAt: null,
      isManagementKey: false,
      isFreeTier: false,
      allowedDataRegions: ['global'],
      freeModelDailyLimit: null,
      externalUser: null,
      externalApiKey: null,
      ...rest,
    },
  )
  return { key: created.key, hash: created.data.hash, workspaceId }
}

export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` })
