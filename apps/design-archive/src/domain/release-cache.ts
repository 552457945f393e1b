import { type CompressedBody, compressBody } from './compression.ts'
import type { ReleaseRepository, StoredDocument, StoredRelease } from './ports.ts'

/** One document of a release as served: raw and pre-compressed bytes plus validators. */
export interface ServedDocument {
  sha256: string
  /** Strong entity tag: the quoted sha256 of the raw bytes. */
  etag: string
  raw: Buffer
  gzip: Buffer
  br: Buffer
}

export interface ServedRelease {
  version: string
  publishedAt: Date
  /** HTTP-date of publishedAt (second precision, as Last-Modified carries it). */
  lastModified: string
  /** publishedAt truncated to whole seconds, for If-Modified-Since comparisons. */
  lastModifiedSeconds: number
  documents: Map<string, ServedDocument>
}

export interface CacheLogger {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

/**
 * A stored release as served. The compressed bodies come from the database (made at publish);
 * a release published before they were stored is compressed here, and `backfilled` lists those
 * documents so the caller can store them for the next start.
 */
export async function prepareRelease(
  stored: StoredRelease,
): Promise<ServedRelease & { backfilled: Array<StoredDocument & CompressedBody> }> {
  const documents = new Map<string, ServedDocument>()
  const backfilled: Array<StoredDocument & CompressedBody> = []
  for (const d of stored.documents) {
    let encoded: CompressedBody
    if (d.gzip && d.br) encoded = { gzip: d.gzip, br: d.br }
    else {
      encoded = await compressBody(d.body)
      backfilled.push({ ...d, ...encoded })
    }
    documents.set(d.name, { sha256: d.sha256, etag: `"${d.sha256}"`, raw: d.body, ...encoded })
  }
  const seconds = Math.floor(stored.publishedAt.getTime() / 1000)
  return {
    version: stored.version,
    publishedAt: stored.publishedAt,
    lastModified: new Date(seconds * 1000).toUTCString(),
    lastModifiedSeconds: seconds,
    documents,
    backfilled,
  }
}

/**
 * The releases this replica serves, in memory. The active one is swapped in whole when a poll
 * of the active version sees a change (every replica polls, so all pick up an activation within
 * one interval); releases asked for by `?version=` are kept in a small LRU.
 */
export class ReleaseCache {
  private active: ServedRelease | undefined
  private readonly pinned = new Map<string, Promise<ServedRelease | undefined>>()
  private timer: NodeJS.Timeout | undefined
  private refreshing: Promise<boolean> | undefined

  constructor(
    private readonly releases: Pick<ReleaseRepository, 'activeVersion' | 'load' | 'storeCompressed'>,
    private readonly options: { logger?: CacheLogger; maxPinned?: number } = {},
  ) {}

  current(): ServedRelease | undefined {
    return this.active
  }

  /** Loads the active release if it changed; true when a new release was swapped in. */
  refresh(): Promise<boolean> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = undefined
    })
    return this.refreshing
  }

  private async doRefresh(): Promise<boolean> {
    const version = await this.releases.activeVersion()
    if (version === null || version === this.active?.version) return false
    const stored = await this.releases.load(version)
    if (!stored) return false
    const previous = this.active?.version
    this.active = await this.prepare(stored)
    this.options.logger?.info({ version, previous: previous ?? null }, 'serving release')
    return true
  }

  private async prepare(stored: StoredRelease): Promise<ServedRelease> {
    const { backfilled, ...served } = await prepareRelease(stored)
    if (backfilled.length)
      // Best effort: serving does not wait for it, and another replica may store the same bytes.
      this.releases.storeCompressed(stored.version, backfilled).catch((err: unknown) => {
        this.options.logger?.warn({ err, version: stored.version }, 'storing compressed bodies failed')
      })
    return served
  }

  /** A specific release (for `?version=`), loaded once and kept; undefined when it does not exist. */
  release(version: string): Promise<ServedRelease | undefined> {
    if (this.active?.version === version) return Promise.resolve(this.active)
    const cached = this.pinned.get(version)
    if (cached) {
      // Move to the end: most recently used.
      this.pinned.delete(version)
      this.pinned.set(version, cached)
      return cached
    }
    const loading = this.releases.load(version).then((stored) => (stored ? this.prepare(stored) : undefined))
    this.pinned.set(version, loading)
    // Misses and failures are not remembered: a release published later must become reachable.
    loading.then(
      (found) => {
        if (!found) this.pinned.delete(version)
      },
      () => this.pinned.delete(version),
    )
    const max = this.options.maxPinned ?? 8
    while (this.pinned.size > max) this.pinned.delete(this.pinned.keys().next().value!)
    return loading
  }

  /** Polls the active version every `intervalMs`; a failed poll keeps serving what is in memory. */
  start(intervalMs: number): void {
    this.stop()
    this.timer = setInterval(() => {
      this.refresh().catch((err: unknown) => this.options.logger?.warn({ err }, 'release poll failed'))
    }, intervalMs)
    this.timer.unref()
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
  }
}
