import { freezeWithJson, jsonBytesOf } from '@quartet/core/json-text'
import { VersionedCache } from '@quartet/core/versioned-cache'
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

/**
 * The account views cache (domain/ports/views.ts, ViewCache): per process, each value under the version token
 * its request read before it read the database (core's VersionedCache), the way principals are
 * cached (principal-cache.ts; the same token, replaced by every committed change to what the
 * account's views show). A value is used while the request's token is the one it was cached
 * under, it is younger than `maxAgeMs`, and its own time has not run out (`validUntil`: a page of
 * subdomains stops being true when one of them expires). Values are frozen and carry their JSON
 * bytes, so a hit costs neither a query nor serialising and encoding the rows again.
 *
 * Misses of one value under one token at once share one read.
 */
export function cachedViews(options: ViewCacheOptions): ViewCache {
  const views = new VersionedCache<ViewLoad<object>>({
    maxAgeMs: options.maxAgeMs,
    // The kept bytes, and about as much again for the objects and the key.
    weight: {
      of: (load, id) => 2 * jsonBytesOf(load.value)!.length + 2 * id.length,
      max: options.maxBytes ?? 8 * 1024 * 1024,
    },
    now: options.now,
    ...(options.onLost ? { onLost: options.onLost } : {}),
  })
  // Each value read's key and load, for holds (the values are frozen, so the answer is the entry's).
  const loadOf = new WeakMap<object, { id: string; load: ViewLoad<object> }>()
  const validUntil = (load: ViewLoad<object>) => load.validUntil ?? Infinity

  return {
    async read<T extends object>(
      accountId: string,
      token: string | null,
      key: string,
      load: () => Promise<ViewLoad<T>>,
    ): Promise<T> {
      if (token === null) return (await load()).value
      const id = `${accountId} ${key}`
      // A hit answers here, without the miss's closures and promises.
      const hit = views.get(id, token)
      if (hit) return hit.value as T
      const loaded = await views.read(
        id,
        token,
        () =>
          load().then((l) => {
            freezeWithJson(l.value)
            loadOf.set(l.value, { id, load: l })
            return l
          }),
        { askedAt: performance.now(), validUntil },
      )
      return loaded.value as T
    },

    holds(values, token) {
      if (token === null) return false
      // One clock reading for them all: a kept batch answer asks for ten values a request.
      const now = options.now()
      return values.every((value) => {
        if (typeof value !== 'object' || value === null) return false
        const read = loadOf.get(value)
        return read !== undefined && views.holds(read.id, read.load, token, now)
      })
    },
  }
}
