import { operationsOver, publicAccess, type AnyOperation } from '@quartet/core/operation'
import { mountOperations } from '@quartet/core/operation/express'
import { operationsDocument } from '@quartet/core/operation/openapi'
import type { Express } from 'express'
import { z } from 'zod'
import { BASE_PATH, DOCUMENT_NAMES, RELEASE_VERSION_PATTERN } from '../domain/documents.ts'
import { readDocument } from '../domain/read-document.ts'
import type { ReleaseCache } from '../domain/release-cache.ts'
import {
  assertPreconditions,
  guardDocumentPaths,
  registerDocumentPathFallback,
  sendDocument,
} from './documents.ts'

// --- contract -------------------------------------------------------------------------------

export const ZDocumentParams = z.object({ document: z.enum(DOCUMENT_NAMES) })
export type TDocumentParams = z.infer<typeof ZDocumentParams>

export const ZDocumentQuery = z.object({
  version: z
    .string()
    .regex(RELEASE_VERSION_PATTERN, 'must be a release version (letters, digits, ".", "_", "+", "-")')
    .optional()
    .describe('a release version to read instead of the active one; such responses are immutable'),
})
export type TDocumentQuery = z.infer<typeof ZDocumentQuery>

export const ZDocument = z
  .looseObject({})
  .describe('the JSON document (see its JSON Schema and manifest.json)')

export const ZErrorEnvelope = z.object({
  error: z.object({ code: z.string(), message: z.string(), request_id: z.string().optional() }),
})

const IMMUTABLE = 'public, max-age=31536000, immutable'
const ENTITY_HEADERS = {
  ETag: 'strong entity tag: the quoted sha256 of the uncompressed document',
  'Last-Modified': 'when the release was published',
  'Cache-Control': 'public, max-age=300, stale-while-revalidate=86400 by default; immutable with ?version=',
  Vary: 'Accept-Encoding',
}

// --- operations -----------------------------------------------------------------------------

/** What the operations need: the releases served from memory and the Cache-Control of the active one. */
export interface DocumentDeps {
  cache: ReleaseCache
  cacheControl: string
}

const { defineRepresentation } = operationsOver<DocumentDeps>()

/**
 * A document is a stored representation, not a JSON reply: the handler picks the release and
 * document and checks the preconditions that can fail (412, in the envelope); `respond` sends the
 * stored bytes with their validators (304) and negotiated encoding. A hot read: its answer before
 * express is the fast path (http/fast-path.ts, registered for this operation), which answers the
 * common reads of the active release (GET, HEAD, OPTIONS without a query) with the same bytes.
 */
export const getDocument = defineRepresentation({
  name: 'getDocument',
  summary: 'One of the nine design documents of the active release (or of ?version=)',
  description:
    'Served from memory, raw or pre-compressed (br preferred over gzip; Accept-Encoding). Conditional per RFC 9110 §13.2.2: If-Match (strong) and If-Unmodified-Since (412), then If-None-Match (304) and If-Modified-Since. HEAD and CORS preflight (OPTIONS) are answered too; other methods get 405 with Allow.',
  tags: ['documents'],
  route: { method: 'get', path: `${BASE_PATH}/:document` },
  input: { params: ZDocumentParams, query: ZDocumentQuery },
  responses: {
    200: { description: 'the document', schema: ZDocument, headers: ENTITY_HEADERS },
    304: {
      description: 'not modified (If-None-Match or If-Modified-Since): validators and CORS headers, no body',
      headers: {
        ETag: ENTITY_HEADERS.ETag,
        'Cache-Control': ENTITY_HEADERS['Cache-Control'],
        Vary: ENTITY_HEADERS.Vary,
      },
    },
  },
  auth: publicAccess,
  hot: {
    dependsOn:
      "the active release's documents, held in memory with their encodings and validators (domain/release-cache.ts)",
    invalidatedBy:
      'publishing or activating a release replaces the release version in Postgres; every replica polls it and swaps the whole release at once',
  },
  errors: {
    bad_request: 'malformed ?version=',
    not_found: 'no such document, or no such release (release_not_found)',
    release_not_found: 'no such document, or no such release (release_not_found)',
    method_not_allowed: 'method not allowed; see Allow',
    precondition_failed: 'If-Match or If-Unmodified-Since does not hold for the document',
    service_unavailable: 'no release loaded yet',
  },
  async handler({ params, query }, { deps, req }) {
    const found = await readDocument(deps.cache, params.document, query.version)
    assertPreconditions(req, found.release, found.document)
    return { ...found, cacheControl: found.pinned ? IMMUTABLE : deps.cacheControl }
  },
  respond(found, req, res) {
    sendDocument(req, res, found.release, found.document, found.cacheControl)
  },
})

/** Every design-archive API endpoint: app.ts serves these, and /openapi.json documents them. */
export const designArchiveOperations: ReadonlyArray<AnyOperation<DocumentDeps>> = [getDocument]

/** The document path: its guard, the operations, then what else the path answers (OPTIONS, 405). */
export function mountDocumentOperations(app: Express, deps: DocumentDeps): void {
  guardDocumentPaths(app)
  mountOperations(app, designArchiveOperations, { deps, auth: [] })
  registerDocumentPathFallback(app)
}

export function designArchiveOpenApi(): Record<string, unknown> {
  return operationsDocument(
    {
      title: 'design-archive',
      version: '1.0.0',
      description:
        'Nine versioned JSON documents of design knowledge (styles, blocks, quality gates, bilingual terms, term mappings, learning paths, catalog, manifest, skill manifest), served from memory and cache-correct.',
    },
    designArchiveOperations,
    { errorSchema: ZErrorEnvelope },
  )
}
