import { MemoryKeyValueStore } from './kv/memory.ts'
import type { KeyValueStore } from './kv/port.ts'
import { RedisKeyValueStore } from './kv/redis.ts'

export { MemoryKeyValueStore } from './kv/memory.ts'
export type { KeyValueStore, WindowHit } from './kv/port.ts'
export { lateDeadline } from './clock.ts'
export { DEFAULT_COMMAND_TIMEOUT_MS, RedisKeyValueStore, type RedisKeyValueStoreOptions } from './kv/redis.ts'

/**
 * Redis when a URL is configured, else memory (single node only; the caller logs that). The
 * warning is the caller's so it lands in the app's own log with its name.
 */
export function createKeyValueStore(options: {
  redisUrl?: string | undefined
  keyPrefix: string
  /** Redis: how long one command may take (and a new client's first connection). */
  commandTimeoutMs?: number
}): KeyValueStore {
  return options.redisUrl
    ? RedisKeyValueStore.connect(options.redisUrl, options.keyPrefix, options.commandTimeoutMs)
    : new MemoryKeyValueStore()
}
