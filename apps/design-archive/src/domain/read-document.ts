import { ApiError } from '@quartet/core/errors'
import './errors.ts'
import type { DocumentName } from './documents.ts'
import type { ReleaseCache, ServedDocument, ServedRelease } from './release-cache.ts'

export interface DocumentToServe {
  release: ServedRelease
  document: ServedDocument
  /** Read from a release named by version (immutable), not from whichever release is active. */
  pinned: boolean
}

/**
 * One document, from the active release or from the release `version` names: 503 while no release
 * is loaded, 404 release_not_found for a version that does not exist, 404 for a document the
 * release lacks.
 */
export async function readDocument(
  cache: Pick<ReleaseCache, 'current' | 'release'>,
  name: DocumentName,
  version: string | undefined,
): Promise<DocumentToServe> {
  let release: ServedRelease | undefined
  if (version !== undefined) {
    release = await cache.release(version)
    if (!release) throw new ApiError('release_not_found', `no release ${JSON.stringify(version)}`)
  } else {
    release = cache.current()
    if (!release) throw new ApiError('service_unavailable', 'no release is loaded yet')
  }
  const document = release.documents.get(name)
  if (!document) throw new ApiError('not_found', `release ${release.version} has no ${name}`)
  return { release, document, pinned: version !== undefined }
}
