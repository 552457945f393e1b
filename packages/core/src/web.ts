import { existsSync } from 'node:fs'
import path from 'node:path'
import express, { type Express, type Request, type RequestHandler, type Response } from 'express'
import { ApiError } from './errors.ts'
import type { HttpAppOptions } from './http.ts'

/**
 * What the services with web pages share (pickup-share's pages and admin, dns-manager's back
 * office): the cookie reader, the CSRF guard of state-changing requests, the pages' CSP, and the
 * serving of a Vite build (one HTML document, hashed assets).
 */

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

/** A cookie's value, or undefined; a value that is not valid percent-encoding is no cookie of ours. */
export function cookieValue(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim())
      } catch {
        return undefined
      }
    }
  }
  return undefined
}

/**
 * Against CSRF: a state-changing request must come from our own origin (Sec-Fetch-Site:
 * same-origin, or an Origin header naming us) and carry X-Requested-With, which a cross-site HTML
 * form cannot send. `what` names the requests in the messages ("admin", "account").
 */
export function csrfGuard(allowedOrigins: string[], what = 'admin'): RequestHandler {
  return (req, _res, next) => {
    if (SAFE_METHODS.has(req.method)) return next()
    if (!req.get('x-requested-with'))
      throw new ApiError('csrf_rejected', `state-changing ${what} requests need an X-Requested-With header`)
    const site = req.get('sec-fetch-site')
    const origin = req.get('origin')
    const own = `${req.protocol}://${req.get('host')}`
    const allowed = allowedOrigins.length ? allowedOrigins : [own]
    if (site !== undefined && site !== 'same-origin')
      throw new ApiError('csrf_rejected', `cross-site ${what} request refused (Sec-Fetch-Site: ${site})`)
    if (origin !== undefined && !allowed.includes(origin.replace(/\/$/, '')))
      throw new ApiError('csrf_rejected', `${what} requests from origin ${origin} are refused`)
    if (site === undefined && origin === undefined)
      throw new ApiError(
        'csrf_rejected',
        `state-changing ${what} requests need an Origin header naming this site`,
      )
    next()
  }
}

/**
 * Helmet options for pages: scripts and styles only from this site (no inline script, no inline
 * style element), fetches to this site or `connectOrigins`, no framing. `mediaSources`: where
 * audio and video may also come from (`blob:` for media a page decrypts itself).
 */
export function webHelmetOptions(
  connectOrigins: string[] = [],
  mediaSources: string[] = [],
): NonNullable<HttpAppOptions['helmet']> {
  return {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        'default-src': ["'self'"],
        'script-src': ["'self'"],
        'script-src-attr': ["'none'"],
        'style-src': ["'self'"],
        'img-src': ["'self'", 'data:'],
        'font-src': ["'self'"],
        ...(mediaSources.length ? { 'media-src': ["'self'", ...mediaSources] } : {}),
        'connect-src': ["'self'", ...connectOrigins],
        'form-action': ["'self'"],
        'frame-ancestors': ["'none'"],
        'base-uri': ["'none'"],
        'object-src': ["'none'"],
      },
    },
    referrerPolicy: { policy: 'no-referrer' },
  }
}

/**
 * Where a Vite build of pages lives: the first of `candidates` holding an index.html. Looked up
 * per request, so a build made after start-up counts.
 */
export function findWebRoot(candidates: string[]): string | undefined {
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html')))
}

/** Encodings the build writes beside each text asset (web-pages' vite config), best first. */
const PRECOMPRESSED = [
  { encoding: 'br', ext: '.br' },
  { encoding: 'gzip', ext: '.gz' },
] as const

/** Whether an Accept-Encoding header takes `encoding` (present, and not with q=0). */
export function acceptsEncoding(header: string | undefined, encoding: string): boolean {
  for (const part of (header ?? '').split(',')) {
    const [name, ...params] = part.trim().split(';')
    if (name?.trim().toLowerCase() !== encoding) continue
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  }
  return false
}

/**
 * Sends `file` as its precompressed `.br` or `.gz` copy when the client takes that encoding and
 * the build wrote one; true when it did. Always marks the answer `Vary: Accept-Encoding`.
 */
function sendPrecompressed(
  req: Request,
  res: Response,
  file: string,
  options: { cacheControl: string; lastModified?: boolean },
): boolean {
  res.vary('Accept-Encoding')
  for (const { encoding, ext } of PRECOMPRESSED) {
    if (!acceptsEncoding(req.get('accept-encoding'), encoding) || !existsSync(file + ext)) continue
    res
      .set({ 'Content-Encoding': encoding, 'Cache-Control': options.cacheControl })
      .type(path.extname(file))
      .sendFile(file + ext, { acceptRanges: false, lastModified: options.lastModified ?? true })
    return true
  }
  return false
}

const HTML_CACHE = 'no-cache'
const ASSET_CACHE = 'public, max-age=31536000, immutable'

/**
 * Serves a Vite build: hashed assets under /assets (a year, immutable; a missing one is a 404),
 * the one HTML document at each of `pages` (revalidated), and /favicon.svg. Pages, assets and the
 * icon ignore Range (small files, sent whole). Without a build the pages answer 503 saying how to
 * build them.
 */
export function serveWebBuild(
  app: Express,
  options: {
    webRoot: () => string | undefined
    pages: readonly string[]
    buildHint: string
    /**
     * Unknown page paths (a GET or HEAD asking for HTML, outside `apiPrefix`) answer 404 with the
     * one HTML document, whose script shows the not-found page; API paths keep their envelope.
     */
    notFoundPage?: { apiPrefix: string }
  },
): void {
  const statics = new Map<string, ReturnType<typeof express.static>>()
  app.use('/assets', (req, res, next) => {
    const root = options.webRoot()
    if (!root) return next()
    if (req.method === 'GET' || req.method === 'HEAD') {
      // Hashed names: a path that leaves the folder is simply not found.
      let name: string | null = null
      try {
        name = decodeURIComponent(req.path)
      } catch {
        // not a name of ours: express.static answers it
      }
      const file = name === null ? null : path.join(root, 'assets', path.normalize(name))
      if (file?.startsWith(path.join(root, 'assets') + path.sep) && existsSync(file))
        if (sendPrecompressed(req, res, file, { cacheControl: ASSET_CACHE })) return
    }
    let serve = statics.get(root)
    if (!serve) {
      serve = express.static(path.join(root, 'assets'), {
        index: false,
        fallthrough: true,
        acceptRanges: false,
        setHeaders: (r) => r.setHeader('Cache-Control', ASSET_CACHE),
      })
      statics.set(root, serve)
    }
    return serve(req, res, next)
  })

  const sendPage = (req: Request, res: Response, status: number) => {
    const root = options.webRoot()
    if (!root) {
      res
        .status(503)
        .set('Cache-Control', 'no-store')
        .type('text/plain')
        .send(`The web pages are not built: run \`${options.buildHint}\`.\n`)
      return
    }
    const index = path.join(root, 'index.html')
    res.status(status)
    if (sendPrecompressed(req, res, index, { cacheControl: HTML_CACHE })) return
    res.set('Cache-Control', HTML_CACHE).sendFile(index, { lastModified: true, acceptRanges: false })
  }
  for (const page of options.pages) app.get(page, (req, res) => sendPage(req, res, 200))

  app.get('/favicon.svg', (_req, res, next) => {
    const root = options.webRoot()
    if (!root || !existsSync(path.join(root, 'favicon.svg'))) return next()
    res
      .set('Cache-Control', 'public, max-age=86400')
      .sendFile(path.join(root, 'favicon.svg'), { acceptRanges: false })
  })

  const notFound = options.notFoundPage
  if (notFound)
    app.use((req, res, next) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return next()
      if (
        req.path.startsWith(notFound.apiPrefix) ||
        !req.accepts('html') ||
        req.accepts(['json', 'html']) === 'json'
      )
        return next()
      sendPage(req, res, 404)
    })
}
