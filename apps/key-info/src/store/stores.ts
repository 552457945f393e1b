import type { KeyValueStore } from '@quartet/core/kv'
import type { FreeModelCounter, KeyStore, UsageStore } from '../domain/ports.ts'
import type { Db } from './db.ts'
import { createFreeModelCounter } from './free-model-counter.ts'
import { createKeyRepository } from './key-repository.ts'
import {
  createKeyVersions,
  type KeyRecordCacheOptions,
  versionedKeyStore,
  versionedUsageStore,
} from './key-record-cache.ts'
import { createUsageRepository } from './usage-repository.ts'

export interface Stores {
  keys: KeyStore
  usage: UsageStore
  freeModel: FreeModelCounter
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
  }
}
