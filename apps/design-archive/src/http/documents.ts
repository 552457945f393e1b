import { ApiError } from '@quartet/core/errors'
import { answerBeforeExpress } from '@quartet/core/http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Express, Request } from 'express'
import '../domain/errors.ts'
import { BASE_PATH, isDocumentName } from '../domain/documents.ts'
import type { ServedDocument, ServedRelease } from '../domain/release-cache.ts'
import {
  ifMatchMatches,
  ifNoneMatchMatches,
  modifiedSince,
  negotiateEncoding,
  notModifiedSince,
} from './negotiation.ts'

const ALLOW = 'GET, HEAD, OPTIONS'

// --- the representation of a document ---------------------------------------------------------

/**
 * The raw request path must name a document exactly. Express decodes and case-folds route
 * matching (`/Manifest.JSON`, `manifest%2Ejson`, `..%2f`); comparing the undecoded path against
 * the nine names keeps every encoding trick, case variant and trailing slash a plain 404.
 */
function rawPathOf(req: Pick<Request, 'originalUrl'>): string {
  const url = req.originalUrl
  const query = url.indexOf('?')
  return query === -1 ? url : url.slice(0, query)
}

export function documentOf(req: Pick<Request, 'originalUrl'>): string | undefined {
  const rawPath = rawPathOf(req)
  if (!rawPath.startsWith(`${BASE_PATH}/`)) return undefined
  const name = rawPath.slice(BASE_PATH.length + 1)
  return isDocumentName(name) ? name : undefined
}

/** CORS headers of every document response (and preflight). */
export const CORS_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Access-Control-Allow-Origin', '*'],
  // Last-Modified, Content-Length and Content-Type are CORS-safelisted already.
  ['Access-Control-Expose-Headers', 'ETag, X-Request-Id'],
  // helmet defaults CORP to same-origin; these documents are meant to be read from anywhere.
  ['Cross-Origin-Resource-Policy', 'cross-origin'],
]

/**
 * Security headers of a JSON document response: the OWASP REST set instead of helmet's
 * page-oriented defaults. A document is data, never a page: `default-src 'none'` and
 * `frame-ancestors 'none'` are stricter than helmet's CSP for it, and the headers that only
 * matter to HTML (COOP, Origin-Agent-Cluster, X-DNS-Prefetch-Control, X-Download-Options,
 * X-Permitted-Cross-Domain-Policies, X-XSS-Protection) are dropped — about 600 bytes less on
 * every response, which counts when a 304 is all headers.
 */
export const DOCUMENT_SECURITY_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'"],
  ['X-Content-Type-Options', 'nosniff'],
  ['X-Frame-Options', 'DENY'],
  ['Referrer-Policy', 'no-referrer'],
  ['Strict-Transport-Security', 'max-age=31536000; includeSubDomains'],
]
const PAGE_ONLY_HEADERS = [
  'Cross-Origin-Opener-Policy',
  'Origin-Agent-Cluster',
  'X-DNS-Prefetch-Control',
  'X-Download-Options',
  'X-Permitted-Cross-Domain-Policies',
  'X-XSS-Protection',
]

/** Replaces whatever security headers the pipeline set (helmet) with the document set. */
export function setDocumentSecurityHeaders(res: ServerResponse): void {
  for (const name of PAGE_ONLY_HEADERS) res.removeHeader(name)
  for (const [name, value] of DOCUMENT_SECURITY_HEADERS) res.setHeader(name, value)
}

function setCors(res: ServerResponse): void {
  for (const [name, value] of CORS_HEADERS) res.setHeader(name, value)
}

const API_PREFIX = BASE_PATH.slice(0, BASE_PATH.indexOf('/', 1) + 1).toLowerCase() // `/design-api/`

/**
 * Every answer under `/design-api/`, errors included (404, 405, 412, and the 400s core's input
 * rule gives before any route runs), carries the CORS headers of the 200s: without them a page
 * on another origin sees a CORS failure instead of the 404. Installed in front of express, so
 * core's own refusals get them too, and behind the fast path, which sets its own.
 */
export function installCorsOnApiAnswers(app: Express): void {
  answerBeforeExpress(app, (req, res) => {
    const url = req.url
    if (url !== undefined && url.slice(0, API_PREFIX.length).toLowerCase() === API_PREFIX) setCors(res)
    return false
  })
}

/**
 * What a 304 leaves out of what its 200 would carry. RFC 9110 §15.4.5: a 304 carries ETag,
 * Cache-Control and Vary as the 200 would, and a sender SHOULD NOT generate other representation
 * metadata where an ETag is sent, so Last-Modified stays out (a cache keeps the one its stored 200
 * had). Nor do the document security headers go on it: they govern a body (how to sniff, frame
 * or refer from it), and a 304 has none. A browser that revalidates uses its stored 200 with that
 * 200's headers, which RFC 9111 §4.3.4 keeps where the 304 does not replace them. The CORS
 * headers stay: a page that sends If-None-Match itself reads the 304 under them. Five header
 * lines less on every revalidation, to write and to parse.
 */
export const NOT_IN_304: ReadonlySet<string> = new Set([
  'Last-Modified',
  ...DOCUMENT_SECURITY_HEADERS.map(([name]) => name),
])

/** The validator and caching headers of a document response (200 and 304 alike). */
export function entityHeaders(
  release: ServedRelease,
  document: ServedDocument,
  cacheControl: string,
): Array<[string, string]> {
  return [
    ['ETag', document.etag],
    ['Last-Modified', release.lastModified],
    ['Cache-Control', cacheControl],
    ['Vary', 'Accept-Encoding'],
  ]
}

/**
 * Whether a request carries a precondition that can fail (If-Match, If-Unmodified-Since): the
 * fast path leaves those to express, so its common request costs two header lookups more.
 */
export function hasFailablePrecondition(req: IncomingMessage): boolean {
  const h = req.headers
  return h['if-match'] !== undefined || h['if-unmodified-since'] !== undefined
}

/**
 * Throws 412 precondition_failed when If-Match, or without it If-Unmodified-Since, does not hold
 * for the document (RFC 9110 §13.2.2, steps 1 and 2, which come before If-None-Match and
 * If-Modified-Since). nginx answers these the same way.
 */
export function assertPreconditions(
  req: IncomingMessage,
  release: ServedRelease,
  document: ServedDocument,
): void {
  const ifMatch = req.headers['if-match']
  if (ifMatch !== undefined) {
    if (!ifMatchMatches(ifMatch, document.etag))
      throw new ApiError(
        'precondition_failed',
        `If-Match does not match the document's ETag ${document.etag}`,
      )
    return
  }
  const ifUnmodifiedSince = req.headers['if-unmodified-since']
  if (ifUnmodifiedSince !== undefined && modifiedSince(ifUnmodifiedSince, release.lastModifiedSeconds))
    throw new ApiError(
      'precondition_failed',
      `the document was modified after If-Unmodified-Since (Last-Modified: ${release.lastModified})`,
    )
}

/** The condition of a GET/HEAD: If-None-Match decides when present, else If-Modified-Since. */
export function isNotModified(
  req: IncomingMessage,
  release: ServedRelease,
  document: ServedDocument,
): boolean {
  const ifNoneMatch = req.headers['if-none-match']
  if (ifNoneMatch !== undefined) return ifNoneMatchMatches(ifNoneMatch, document.etag)
  const ifModifiedSince = req.headers['if-modified-since']
  return ifModifiedSince !== undefined && notModifiedSince(ifModifiedSince, release.lastModifiedSeconds)
}

/** Answers a CORS preflight for a document. */
export function sendPreflight(res: ServerResponse): void {
  setDocumentSecurityHeaders(res)
  setCors(res)
  res.setHeader('Access-Control-Allow-Methods', ALLOW)
  res.setHeader(
    'Access-Control-Allow-Headers',
    'If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, Cache-Control',
  )
  res.setHeader('Access-Control-Max-Age', '86400')
  res.setHeader('Allow', ALLOW)
  res.setHeader('Vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
  res.writeHead(204).end()
}

/**
 * Answers GET or HEAD of one document from memory: validators, 304 when a condition holds,
 * otherwise the negotiated representation (no body for HEAD). Shared by the express route and
 * the fast path, so both send exactly the same thing.
 */
export function sendDocument(
  req: IncomingMessage,
  res: ServerResponse,
  release: ServedRelease,
  document: ServedDocument,
  cacheControl: string,
): void {
  setDocumentSecurityHeaders(res)
  setCors(res)
  for (const [name, value] of entityHeaders(release, document, cacheControl)) res.setHeader(name, value)
  if (isNotModified(req, release, document)) {
    for (const name of NOT_IN_304) res.removeHeader(name)
    res.writeHead(304).end()
    return
  }

  const coding = negotiateEncoding(req.headers['accept-encoding'])
  const body = coding === 'br' ? document.br : coding === 'gzip' ? document.gzip : document.raw
  res.setHeader('Content-Type', 'application/json; charset=utf-8')
  if (coding !== 'identity') res.setHeader('Content-Encoding', coding)
  res.setHeader('Content-Length', body.length)
  res.writeHead(200)
  if (req.method === 'HEAD') res.end()
  else res.end(body)
}

/**
 * Anything under the prefix that is not exactly a document name is a 404 before express decodes
 * it (a malformed escape like %E0%A4 would otherwise be a 400 from the router). Mounted before
 * the document operation.
 */
export function guardDocumentPaths(app: Express): void {
  app.use(BASE_PATH, (req, _res, next) => {
    if (documentOf(req)) next()
    else next(new ApiError('not_found', `no document at ${rawPathOf(req)}`))
  })
}

/**
 * What the document path answers besides the getDocument operation (GET and HEAD): the CORS
 * preflight (OPTIONS) and 405 with Allow for every other method. Mounted after the operation.
 */
export function registerDocumentPathFallback(app: Express): void {
  app.all(`${BASE_PATH}/:document`, (req, res) => {
    if (req.method === 'OPTIONS') {
      sendPreflight(res)
      return
    }
    throw new ApiError(
      'method_not_allowed',
      `${req.method} is not allowed on ${req.path}; use GET or HEAD`,
      undefined,
      {
        headers: { Allow: ALLOW },
      },
    )
  })
}
