import { randomBytes } from 'node:crypto'
import type { KeyValueStore } from '@quartet/core/kv'
import { ReadsInFlight } from '@quartet/core/reads-in-flight'
import type { KeyStore, KeyWithUsage, UsageStore } from '../domain/ports.ts'

/**
 * Version tokens of key records, in kv: every committed change to a key or its usage gives the
 * key a new random token, so a process that cached the key's record under the old token sees
 * that it is out of date on its next read, whichever replica or CLI made the change.
 *
 * Why a cached record is never older than a change the caller could know about: a reader reads
 * the token first and the database second, and caches what it read under that token. A writer
 * commits first and replaces the token second (and only then answers its client). So a change
 * committed after the reader's database read replaces the token the reader cached under, and
 * the next read goes to the database. A key with no token (never read, expired, or lost with a
 * Redis restart) is read from the database and not cached until a token exists; tokens are
 * random, not counters, so a new one never equals an old one a cache still holds.
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
  /** How many keys' records one process keeps; the oldest entry goes first. */
  maxEntries?: number
  /** Milliseconds now (the app's clock, so tests can age entries). */
  now: () => number
  /** A committed change whose token could not be replaced (kv down): worth a warning. */
  onBumpFailed: (err: unknown, hashes: string[]) => void
}

interface Entry {
  token: string
  /** The UTC day the windows were summed for: a new day is a new record. */
  today: string
  cachedAt: number
  record: KeyWithUsage
}

/**
 * The key store with GET /api/v1/key's read cached per process under the key's version token,
 * and key changes (PATCH, DELETE) replacing the token after they commit. A cache hit costs one kv
 * read instead of a database statement. When kv cannot be read, reads go to the database.
 * Unknown keys are not cached.
 * Misses of one key for one day under one token at once share one read (core's ReadsInFlight).
 */
export function versionedKeyStore(
  inner: KeyStore,
  versions: KeyVersions,
  options: KeyRecordCacheOptions,
): KeyStore {
  const maxEntries = options.maxEntries ?? 10_000
  const entries = new Map<string, Entry>()
  // A Redis that restarted (or failed over) may have lost token replacements it had
  // acknowledged, and could then hand back a token a cache still holds: start again.
  // A read whose token was asked for before such a moment is not cached either.
  let lostAt = -Infinity
  /** The database reads out, by key hash. */
  const reads = new ReadsInFlight<KeyWithUsage | null>()
  versions.onLost(() => {
    lostAt = performance.now()
    entries.clear()
    reads.clear()
  })
  const bump = (hashes: string[]) =>
    versions.bump(hashes).catch((err: unknown) => options.onBumpFailed(err, hashes))

  return {
    ...inner,
    async findWithUsage(hash, windows, known) {
      if (options.maxAgeMs <= 0) return inner.findWithUsage(hash, windows)
      let token: string | null
      let askedAt: number
      try {
        if (known === 'unreadable') throw new Error('kv could not be read')
        askedAt = known ? known.askedAt : performance.now()
        token = known ? known.token : await versions.read(hash)
      } catch {
        entries.delete(hash)
        return inner.findWithUsage(hash, windows)
      }
      const cached = entries.get(hash)
      if (
        token !== null &&
        cached?.token === token &&
        cached.today === windows.today &&
        options.now() - cached.cachedAt < options.maxAgeMs
      )
        return cached.record
      // The day's sums are part of what is read: a read for another day is another read.
      const read = reads.read(hash, token === null ? null : `${token} ${windows.today}`, options.now(), () =>
        inner.findWithUsage(hash, windows),
      )
      const cachedAt = read.began
      const record = await read.read
      entries.delete(hash)
      if (record && token !== null) {
        if (askedAt <= lostAt) return record
        entries.set(hash, { token, today: windows.today, cachedAt, record })
        if (entries.size > maxEntries) entries.delete(entries.keys().next().value!)
      } else if (record) {
        // Only a token read before the database may vouch for what was read, so this answer is
        // not cached; the token made now lets the next read cache. Unknown keys get none: a
        // flood of made-up keys leaves nothing behind in kv.
        await versions.start(hash).catch(() => undefined)
      }
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
