import { freezeWithJson, jsonBytesOf } from '@quartet/core/json-text'
import { ReadsInFlight } from '@quartet/core/reads-in-flight'
import type { ViewCache, ViewLoad } from '../domain/ports.ts'

export interface ViewCacheOptions {
  /** How long a value may serve at most, in ms (PRINCIPAL_CACHE_MAX_AGE_MS, as for principals). */
  maxAgeMs: number
  /** How many bytes of JSON (and as much again for the values) the process keeps at most; the least recently used go first. */
  maxBytes?: number
  /** Milliseconds now (the app's clock, so tests can age entries and turn statuses). */
  now: () => number
  /** Calls its listener when kv may have lost tokens (PrincipalVersions.onLost). */
  onLost?: (listener: () => void) => void
}

interface Entry {
  id: string
  token: string
  cachedAt: number
  /** When it last moved to the recently used end (at most once a second: see read). */
  movedAt: number
  validUntil: number
  value: object
  bytes: number
}

/**
 * The account views cache (ports.ts, ViewCache): per process, each value under the version token
 * its request read before it read the database, the way principals are cached
 * (principal-cache.ts; the same token, replaced by every committed change to what the account's
 * views show). A value is used while the request's token is the one it was cached under, it is
 * younger than `maxAgeMs`, and its own time has not run out (`validUntil`: a page of subdomains
 * stops being true when one of them expires). Values are frozen and carry their JSON bytes, so a
 * hit costs neither a query nor serialising and encoding the rows again.
 *
 * Misses of one value under one token at once share one read (core's ReadsInFlight).
 */
export function cachedViews(options: ViewCacheOptions): ViewCache {
  const maxBytes = options.maxBytes ?? 8 * 1024 * 1024
  const entries = new Map<string, Entry>()
  // Each kept value's entry, for holds (the values are frozen, so the answer is the entry's).
  const entryOf = new WeakMap<object, Entry>()
  let bytes = 0
  // A Redis that restarted (or failed over) may hand back a token a value was kept under after
  // losing the change that replaced it: everything goes, and a read begun before is not kept.
  let generation = 0
  /** The reads out, by value; each gives its value frozen. */
  const loading = new ReadsInFlight<ViewLoad<object>>()
  options.onLost?.(() => {
    generation++
    entries.clear()
    loading.clear()
    bytes = 0
  })
  const drop = (key: string, entry: Entry) => {
    entries.delete(key)
    bytes -= entry.bytes
  }
  const usable = (entry: Entry, token: string, now: number) =>
    entry.token === token && now - entry.cachedAt < options.maxAgeMs && now < entry.validUntil

  return {
    async read<T extends object>(
      accountId: string,
      token: string | null,
      key: string,
      load: () => Promise<ViewLoad<T>>,
    ): Promise<T> {
      if (token === null) return (await load()).value
      const id = `${accountId} ${key}`
      const entry = entries.get(id)
      const now = options.now()
      const began = generation
      if (entry) {
        if (usable(entry, token, now)) {
          // Most recently used last, so the first key is the one to let go; moved at most once a
          // second, since each move adds a slot to the map's table (a new table now and then,
          // which under load survived into the old generation as garbage).
          if (now - entry.movedAt >= 1000) {
            entry.movedAt = now
            entries.delete(id)
            entries.set(id, entry)
          }
          return entry.value as T
        }
        drop(id, entry)
      }
      const { read, joined } = loading.read(id, token, now, () =>
        load().then((l) => {
          freezeWithJson(l.value)
          return l
        }),
      )
      const { value, validUntil = Infinity } = (await read) as ViewLoad<T>
      // Joined a read out already: the one who began it keeps the value.
      if (joined) return value
      // The kept bytes, and about as much again for the objects and the key.
      const size = 2 * jsonBytesOf(value)!.length + 2 * id.length
      if (size > maxBytes / 16 || began !== generation) return value
      const current = entries.get(id)
      if (current) drop(id, current)
      const kept: Entry = { id, token, cachedAt: now, movedAt: now, validUntil, value, bytes: size }
      entries.set(id, kept)
      entryOf.set(value, kept)
      bytes += size
      for (const [oldest, old] of entries) {
        if (bytes <= maxBytes) break
        drop(oldest, old)
      }
      return value
    },

    holds(values, token) {
      if (token === null) return false
      // One clock reading for them all: a kept batch answer asks for ten values a request.
      const now = options.now()
      return values.every((value) => {
        if (typeof value !== 'object' || value === null) return false
        const entry = entryOf.get(value)
        return entry !== undefined && entries.get(entry.id) === entry && usable(entry, token, now)
      })
    },
  }
}
