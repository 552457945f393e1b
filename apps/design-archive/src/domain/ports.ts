import type { CompressedBody } from './compression.ts'
import type { BuiltDocument, BuiltRelease } from './content.ts'

/**
 * Ports the domain owns: what releases.ts and release-cache.ts need from storage. src/store
 * implements them over Postgres; the composition root (src/main.ts, src/cli.ts) passes them in.
 */

export interface ReleaseSummary {
  version: string
  publishedAt: Date
  active: boolean
  documents: Array<{ name: string; sha256: string; bytes: number; items: number; schemaVersion: string }>
}

export interface StoredDocument {
  name: string
  body: Buffer
  sha256: string
  /** gzip and brotli of body, stored at publish (absent for releases published before). */
  gzip?: Buffer
  br?: Buffer
}

/** A release as it is stored: the built documents with their compressed bodies. */
export interface PublishedRelease extends BuiltRelease {
  documents: Array<BuiltDocument & CompressedBody>
}

export interface StoredRelease {
  version: string
  publishedAt: Date
  documents: StoredDocument[]
}

/** What the domain needs from storage; src/store implements it over Prisma. */
export interface ReleaseRepository {
  /** Stores the release and its documents in one transaction; throws release_exists on a taken version. */
  insert(release: PublishedRelease, options: { activate: boolean }): Promise<void>
  /** Makes `version` the only active release; false when no such release exists. */
  activate(version: string): Promise<boolean>
  list(): Promise<ReleaseSummary[]>
  activeVersion(): Promise<string | null>
  load(version: string): Promise<StoredRelease | null>
  count(): Promise<number>
  /** Stores the compressed bodies of documents of a release published without them. */
  storeCompressed(version: string, documents: Array<{ name: string } & CompressedBody>): Promise<void>
}
