import type { IncomingMessage, ServerResponse } from 'node:http'
import { requestIdFor } from '@quartet/core/log'
import type { Express } from 'express'
import type { HttpApp } from '@quartet/core/http'
import { answerHotRepresentation } from '@quartet/core/operation/express'
import { prebuiltHead, sendPrebuilt, type PrebuiltHead } from '@quartet/core/prebuilt-head'
import { BASE_PATH, isDocumentName } from '../domain/documents.ts'
import type { ReleaseCache } from '../domain/release-cache.ts'
import type { ServedDocument, ServedRelease } from '../domain/release-cache.ts'
import {
  CORS_HEADERS,
  DOCUMENT_SECURITY_HEADERS,
  entityHeaders,
  hasFailablePrecondition,
  isNotModified,
  NOT_IN_304,
  sendPreflight,
} from './documents.ts'
import { type Coding, negotiateEncoding } from './negotiation.ts'
import { getDocument } from './operations.ts'

/**
 * Bodies up to this size are also kept as latin1 text (one byte a character, the same bytes):
 * sendPrebuilt writes a string body in one write with the head, where a Buffer costs a second
 * chunk. Larger ones stay Buffers: their copy into a string per request would cost more than it
 * saves.
 */
const SINGLE_WRITE_BYTES = 16 * 1024
const sendable = (bytes: Buffer): Buffer | string =>
  bytes.length <= SINGLE_WRITE_BYTES ? bytes.toString('latin1') : bytes

const ROUTE = `${BASE_PATH}/:document`

/**
 * The hot path: GET, HEAD and OPTIONS of a document of the active release, with no query
 * string, answered straight from memory before express, its router and per-request logging run.
 * It sends what the regular pipeline would (X-Request-Id, the document security headers,
 * metrics under the same route template) and falls through to express for everything else: errors, `?version=`,
 * other methods, unknown paths; those keep the envelope and the access log.
 */
export function installDocumentFastPath(
  app: Express,
  options: { cache: ReleaseCache; cacheControl: string; observe: HttpApp['observe'] },
): void {
  const prefix = `${BASE_PATH}/`

  const serveFast = (req: IncomingMessage, res: ServerResponse): boolean => {
    const url = req.url
    const method = req.method
    if (!url || !url.startsWith(prefix) || (method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS'))
      return false
    const name = url.slice(prefix.length)
    if (!isDocumentName(name)) return false // also rejects any query string
    // A precondition that can fail (412) is rare: express decides it, in the envelope.
    if (method !== 'OPTIONS' && hasFailablePrecondition(req)) return false
    const release = options.cache.current()
    const document = release?.documents.get(name)
    if (!release || !document) return false

    const started = performance.now()
    const requestId = requestIdFor(req)
    if (method === 'OPTIONS') {
      res.setHeader('X-Request-Id', requestId)
      sendPreflight(res)
    } else {
      const blocks = headerBlocks(release, document)
      let head: PrebuiltHead
      let body: Buffer | string | undefined
      if (isNotModified(req, release, document)) {
        head = blocks.notModified
      } else {
        const coding = negotiateEncoding(req.headers['accept-encoding'])
        head = blocks[coding]
        body = method === 'HEAD' ? undefined : blocks.bodies[coding]
      }
      // Through writeHead where node builds the head itself (HTTP/1.0, a closing connection,
      // a draining server).
      sendPrebuilt(res, head, requestId, body)
    }
    options.observe(method, ROUTE, res.statusCode, (performance.now() - started) / 1000)
    return true
  }

  // Per document of a release: the complete head of each response it can get, built once. Same
  // headers sendDocument sets (a test compares the two paths header by header).
  type Blocks = Record<'notModified' | Coding, PrebuiltHead> & { bodies: Record<Coding, Buffer | string> }
  const blocksOf = new WeakMap<ServedDocument, Blocks>()
  const headerBlocks = (release: ServedRelease, document: ServedDocument) => {
    let blocks = blocksOf.get(document)
    if (!blocks) {
      const pairs = [
        ...DOCUMENT_SECURITY_HEADERS,
        ...CORS_HEADERS,
        ...entityHeaders(release, document, options.cacheControl),
      ]
      const ok = (length: number, coding?: string) =>
        prebuiltHead(200, [
          ...pairs,
          ['Content-Type', 'application/json; charset=utf-8'],
          ...(coding ? [['Content-Encoding', coding] as const] : []),
          ['Content-Length', String(length)],
        ])
      blocks = {
        notModified: prebuiltHead(
          304,
          pairs.filter(([name]) => !NOT_IN_304.has(name)),
        ),
        identity: ok(document.raw.length),
        gzip: ok(document.gzip.length, 'gzip'),
        br: ok(document.br.length, 'br'),
        bodies: {
          identity: sendable(document.raw),
          gzip: sendable(document.gzip),
          br: sendable(document.br),
        },
      }
      blocksOf.set(document, blocks)
    }
    return blocks
  }

  answerHotRepresentation(app, getDocument, serveFast)
}
