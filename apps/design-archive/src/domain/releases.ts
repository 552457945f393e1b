import { ApiError } from '@quartet/core/errors'
import type { Clock } from '@quartet/core/clock'
import './errors.ts'
import {
  buildRelease,
  type ContentValidator,
  contentInvalid,
  readContentFolder,
  type SourceDocuments,
  validateSources,
} from './content.ts'
import { RELEASE_VERSION_PATTERN } from './documents.ts'
import { compressBody } from './compression.ts'
import type { ReleaseRepository } from './ports.ts'

export function assertReleaseVersion(version: string): string {
  if (!RELEASE_VERSION_PATTERN.test(version))
    throw new ApiError(
      'bad_request',
      `release version ${JSON.stringify(version)} must be 1-64 characters of letters, digits, ".", "_", "+" or "-", starting with a letter or digit`,
    )
  return version
}

/** A sortable default version from the publish time: 2026.11.22-181530. */
export function defaultReleaseVersion(at: Date): string {
  const iso = at.toISOString()
  return `${iso.slice(0, 10).replaceAll('-', '.')}-${iso.slice(11, 19).replaceAll(':', '')}`
}

export interface PublishResult {
  version: string
  published_at: string
  active: boolean
  documents: Array<{ name: string; sha256: string; bytes: number; items: number; schema_version: string }>
}

/** Validates a folder without storing anything: the list of problems, empty when publishable. */
export function checkContentFolder(validator: ContentValidator, dir: string) {
  const read = readContentFolder(dir)
  return { problems: validateSources(validator, read), sources: read.sources }
}

/**
 * Publishes a content folder as one release. Validation happens before any write, and the
 * release with all nine documents is stored in one transaction, so a failure publishes nothing
 * and the current release stays as it is.
 */
export async function publishContent(
  deps: { releases: ReleaseRepository; validator: ContentValidator; clock: Clock },
  input: { dir: string; version?: string; activate: boolean },
): Promise<PublishResult> {
  const publishedAt = deps.clock.now()
  const version = assertReleaseVersion(input.version ?? defaultReleaseVersion(publishedAt))
  const { problems, sources } = checkContentFolder(deps.validator, input.dir)
  if (problems.length) throw contentInvalid(problems)
  const built = buildRelease(deps.validator, sources as SourceDocuments, version, publishedAt)
  const documents = await Promise.all(
    built.documents.map(async (d) => ({ ...d, ...(await compressBody(d.body)) })),
  )
  const release = { ...built, documents }
  await deps.releases.insert(release, { activate: input.activate })
  return {
    version,
    published_at: publishedAt.toISOString(),
    active: input.activate,
    documents: release.documents.map((d) => ({
      name: d.name,
      sha256: d.sha256,
      bytes: d.bytes,
      items: d.items,
      schema_version: d.schemaVersion,
    })),
  }
}

export async function activateRelease(releases: ReleaseRepository, version: string) {
  assertReleaseVersion(version)
  if (!(await releases.activate(version)))
    throw new ApiError('release_not_found', `no release ${JSON.stringify(version)}; see content:list`)
  return { version, active: true }
}

export async function listReleases(releases: ReleaseRepository) {
  return (await releases.list()).map((r) => ({
    version: r.version,
    published_at: r.publishedAt.toISOString(),
    active: r.active,
    documents: r.documents.length,
    bytes: r.documents.reduce((sum, d) => sum + d.bytes, 0),
  }))
}

/**
 * Start-up seeding: when no release exists yet, the bundled content becomes release `version`
 * and is activated. Replicas starting together may race; the loser sees release_exists and
 * carries on with the winner's release.
 */
export async function seedBundledContent(
  deps: { releases: ReleaseRepository; validator: () => ContentValidator; clock: Clock },
  input: { dir: string; version: string },
): Promise<PublishResult | null> {
  if ((await deps.releases.count()) > 0) return null
  try {
    // The validator (nine compiled JSON Schemas) is made only when there is something to seed:
    // a service starting on a database that already has releases never pays for it.
    const seedDeps = { releases: deps.releases, validator: deps.validator(), clock: deps.clock }
    return await publishContent(seedDeps, { dir: input.dir, version: input.version, activate: true })
  } catch (err) {
    if (err instanceof ApiError && err.code === 'release_exists') return null
    throw err
  }
}
