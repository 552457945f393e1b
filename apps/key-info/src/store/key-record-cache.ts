import { randomBytes } from 'node:crypto'
import type { KeyValueStore } from '@quartet/core/kv'
import { VersionedCache } from '@quartet/core/versioned-cache'
import type { KeyStore, KeyWithUsage, UsageStore } from '../domain/ports.ts'

/**
 * Version tokens of key records, in kv: every committed change to a key or its usage gives the
 * key a new random token, so a process that cached the key's record under the old token sees
 * that it is out of date on its next read, whichever replica or CLI made the change.
 *
 * Why a cached record is never older than a change the caller could know about: a reader reads
 * the token first and the database second, a writer commits first and replaces the token second;
 * core's versioned cache (packages/core/src/versioned-cache.ts) keeps the reader's answer under
 * the token it read, and says why that is enough.
 */
export interface KeyVersions {
  /** The key's current token, or null when kv has none (never read, expired, or kv lost it). */
  read(hash: string): Promise<string | null>
  /** Gives a key with no token one, unless a writer or another reader got there first. */
  start(hash: string): Promise<void>
  /** Replaces each key's token, after a committed change. */
  bump(hashes: Iterable<string>): Promise<void>
  /** Calls `listener` when kv may have lost tokens (its connection came back: a restart, a failover). */
  onLost(listener: () => void): void
}

/** Tokens expire: an expired one only costs the next reader one database read. */
const TOKEN_TTL_MS = 24 * 60 * 60_000

/** The kv key holding a key's version token. */
export const versionKvKey = (hash: string) => `key-version:${hash}`

export function createKeyVersions(kv: KeyValueStore): KeyVersions {
  const keyOf = versionKvKey
  const fresh = () => randomBytes(12).toString('base64url')
  return {
    read: (hash) => kv.get(keyOf(hash)),
    async start(hash) {
      await kv.setIfAbsent(keyOf(hash), fresh(), TOKEN_TTL_MS)
    },
    async bump(hashes) {
      await Promise.all([...new Set(hashes)].map((hash) => kv.set(keyOf(hash), fresh(), TOKEN_TTL_MS)))
    },
    onLost: (listener) => kv.onReconnect(listener),
  }
}

export interface KeyRecordCacheOptions {
  /**
   * How long a cached record may serve reads at most, in ms; 0 turns the cache off (writes
   * still replace tokens, for the processes that cache). Bounds how long a change that did not
   * go through this service (SQL by hand, a token replacement lost to a kv outage) stays unseen.
   */
  maxAgeMs: number
  /** How many keys' records one process keeps; the least recently used go first. */
  maxEntries?: number
  /** Milliseconds now (the app's clock, so tests can age entries). */
  now: () => number
  /** A committed change whose token could not be replaced (kv down): worth a warning. */
  onBumpFailed: (err: unknown, hashes: string[]) => void
}

/**
 * The key store with GET /api/v1/key's read cached per process under the key's version token
 * (core's VersionedCache), and key changes (PATCH, DELETE) replacing the token after they commit.
 * A cache hit costs one kv read instead of a database statement. When kv cannot be read, reads go
 * to the database. Unknown keys are not cached.
 * Misses of one key for one day under one token at once share one read.
 */
export function versionedKeyStore(
  inner: KeyStore,
  versions: KeyVersions,
  options: KeyRecordCacheOptions,
): KeyStore {
  const records = new VersionedCache<KeyWithUsage | null>({
    maxAgeMs: options.maxAgeMs,
    maxEntries: options.maxEntries ?? 10_000,
    now: options.now,
    onLost: (listener) => versions.onLost(listener),
  })
  const keepIf = (record: KeyWithUsage | null) => record !== null
  const bump = (hashes: string[]) =>
    versions.bump(hashes).catch((err: unknown) => options.onBumpFailed(err, hashes))

  return {
    ...inner,
    async findWithUsage(hash, windows, known) {
      if (options.maxAgeMs <= 0) return inner.findWithUsage(hash, windows)
      const read = () => inner.findWithUsage(hash, windows)
      let token: string | null
      let askedAt: number
      try {
        if (known === 'unreadable') throw new Error('kv could not be read')
        askedAt = known ? known.askedAt : performance.now()
        token = known ? known.token : await versions.read(hash)
      } catch {
        records.forget(hash)
        return read()
      }
      // The day's sums are part of what is read: a read for another day is another version.
      const version = token === null ? null : `${token} ${windows.today}`
      // A hit answers here, without the miss's closures and promises (the headline read).
      const hit = records.get(hash, version)
      if (hit) return hit
      const record = await records.read(hash, version, read, { askedAt, keepIf })
      // Only a token read before the database may vouch for what was read, so this answer is not
      // cached; the token made now lets the next read cache. Unknown keys get none: a flood of
      // made-up keys leaves nothing behind in kv.
      if (record && token === null) await versions.start(hash).catch(() => undefined)
      return record
    },

    async update(workspaceId, hash, patch, now) {
      const updated = await inner.update(workspaceId, hash, patch, now)
      if (updated) await bump([hash])
      return updated
    },

    async delete(workspaceId, hash) {
      const deleted = await inner.delete(workspaceId, hash)
      if (deleted) await bump([hash])
      return deleted
    },
  }
}

/** The usage store, replacing the token of every key that a batch added usage to. */
export function versionedUsageStore(
  inner: UsageStore,
  versions: KeyVersions,
  onBumpFailed: KeyRecordCacheOptions['onBumpFailed'],
): UsageStore {
  return {
    async record(workspaceId, events) {
      const result = await inner.record(workspaceId, events)
      const changed = events
        .filter((e) => result.outcomes.get(e.id)?.kind === 'inserted')
        .map((e) => e.keyHash)
      if (changed.length)
        await versions.bump(changed).catch((err: unknown) => onBumpFailed(err, [...new Set(changed)]))
      return result
    },
  }
}
