import type { KeyValueStore } from '@quartet/core/kv'
import type { FreeModelCounter, KeyReadAhead, KeyStore, UsageStore } from '../domain/ports.ts'
import { usageWindows } from '../domain/windows.ts'
import type { Db } from './db.ts'
import { createFreeModelCounter, freeModelKvKey, parseFreeModelCount } from './free-model-counter.ts'
import { createKeyRepository } from './key-repository.ts'
import {
  createKeyVersions,
  type KeyRecordCacheOptions,
  versionedKeyStore,
  versionKvKey,
  versionedUsageStore,
} from './key-record-cache.ts'
import { createUsageRepository } from './usage-repository.ts'

export interface Stores {
  keys: KeyStore
  usage: UsageStore
  freeModel: FreeModelCounter
  readAhead: KeyReadAhead
}

/**
 * The stores every entry point (the service, the CLI) writes through, so that every committed
 * change to a key or its usage replaces the key's version token for the processes that cache.
 */
export function createStores(db: Db, kv: KeyValueStore, cache: KeyRecordCacheOptions): Stores {
  const versions = createKeyVersions(kv)
  return {
    keys: versionedKeyStore(createKeyRepository(db), versions, cache),
    usage: versionedUsageStore(createUsageRepository(db), versions, cache.onBumpFailed),
    freeModel: createFreeModelCounter(kv),
    readAhead: keyReadAhead,
  }
}

/** The version token and today's free-model mirror: what `keys.findWithUsage` and describeKey read. */
export const keyReadAhead: KeyReadAhead = {
  kvKeys: (hash, now) => [versionKvKey(hash), freeModelKvKey(hash, usageWindows(now).today)],
  decode: (values, askedAt) =>
    values === null
      ? { version: 'unreadable', freeModelToday: null }
      : {
          version: { token: values[0] ?? null, askedAt },
          freeModelToday: parseFreeModelCount(values[1] ?? null),
        },
}
