import { existsSync } from 'node:fs'
import path from 'node:path'
import express, { type Express } from 'express'
import type { HttpAppOptions } from '@quartet/core/http'
import type { OperationDoc } from '@quartet/core/openapi'
import { z } from 'zod'
import { STORE_KINDS } from '../domain/storage.ts'
import type { Services } from './services.ts'

/** The pages (one HTML document; the script renders the page the path names). */
export const PAGE_PATHS = ['/', '/pickup', '/admin'] as const

/**
 * Where the built pages live: `dist/web` next to the bundle (dist/main.js) or, from the sources
 * (tsx, jest), the package's dist/web. Looked up per request, so a build made after start-up counts.
 */
export function webRoot(): string | undefined {
  const candidates = [path.resolve(__dirname, 'web'), path.resolve(__dirname, '..', '..', 'dist', 'web')]
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html')))
}

/** Origins the pages may upload to besides this site: the S3 endpoint (path and virtual-host style). */
export function uploadOrigins(config: {
  S3_ENDPOINT?: string | undefined
  S3_BUCKET?: string | undefined
  WEB_CONNECT_SRC?: string[]
}): string[] {
  const origins = new Set<string>(config.WEB_CONNECT_SRC ?? [])
  if (config.S3_ENDPOINT) {
    const url = new URL(config.S3_ENDPOINT)
    origins.add(url.origin)
    if (config.S3_BUCKET) origins.add(`${url.protocol}//${config.S3_BUCKET}.${url.host}`)
  }
  return [...origins]
}

/**
 * Helmet options for the pages: scripts and styles only from this site (no inline script, no
 * inline style element), uploads to this site or the configured stores, no framing.
 */
export function webHelmetOptions(connectOrigins: string[]): NonNullable<HttpAppOptions['helmet']> {
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

export const ZSiteInfo = z.object({
  stores: z.array(z.enum(STORE_KINDS)),
  defaultExpireDays: z.number().int(),
  maxExpireDays: z.number().int(),
  defaultMaxDownloads: z.number().int(),
  maxDownloadsCap: z.number().int(),
  maxFileSizeBytes: z.number().int(),
  codeLength: z.number().int(),
  unlimitedEnabled: z.boolean(),
})

export const webOperations: OperationDoc[] = [
  {
    method: 'get',
    path: '/api/site',
    operationId: 'siteInfo',
    summary: 'What the send and pickup pages need: enabled storage kinds and the public limits',
    tags: ['public'],
    responses: { 200: { description: 'public site settings', schema: ZSiteInfo } },
  },
]

const HTML_CACHE = 'no-cache'
const ASSET_CACHE = 'public, max-age=31536000, immutable'

export function registerWeb(app: Express, s: Services): void {
  app.get('/api/site', async (_req, res) => {
    const settings = await s.settings.get()
    res.set('Cache-Control', 'no-store').json({
      stores: s.storage.enabledKinds(),
      defaultExpireDays: settings.defaultExpireDays,
      maxExpireDays: settings.maxExpireDays,
      defaultMaxDownloads: settings.defaultMaxDownloads,
      maxDownloadsCap: settings.maxDownloadsCap,
      maxFileSizeBytes: settings.maxFileSizeBytes,
      codeLength: settings.codeLength,
      unlimitedEnabled: settings.unlimitedEnabled,
    } satisfies z.infer<typeof ZSiteInfo>)
  })

  // Hashed file names (Vite): cached for a year, never revalidated. A missing asset is a 404.
  // Pages, assets and the icon ignore Range (small files, sent whole): an unsatisfiable range
  // was a 400 with the page's text/html content type.
  const statics = new Map<string, ReturnType<typeof express.static>>()
  app.use('/assets', (req, res, next) => {
    const root = webRoot()
    if (!root) return next()
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

  for (const page of PAGE_PATHS)
    app.get(page, (_req, res) => {
      const root = webRoot()
      if (!root) {
        res
          .status(503)
          .set('Cache-Control', 'no-store')
          .type('text/plain')
          .send('The web pages are not built: run `pnpm --filter @quartet/pickup-share build`.\n')
        return
      }
      res
        .set('Cache-Control', HTML_CACHE)
        .sendFile(path.join(root, 'index.html'), { lastModified: true, acceptRanges: false })
    })

  app.get('/favicon.svg', (req, res, next) => {
    const root = webRoot()
    if (!root || !existsSync(path.join(root, 'favicon.svg'))) return next()
    res
      .set('Cache-Control', 'public, max-age=86400')
      .sendFile(path.join(root, 'favicon.svg'), { acceptRanges: false })
  })
}
