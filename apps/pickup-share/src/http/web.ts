import path from 'node:path'
import type { Express, Response } from 'express'
import { findWebRoot, serveWebBuild, webHelmetOptions } from '@quartet/core/web'
import { publicAccess } from '@quartet/core/operation'
import { z } from 'zod'
import { type HeaderSink, HotAnswer, type HotRoute } from '@quartet/core/http'
import type { TSettings } from '../domain/settings.ts'
import { STORE_KINDS, type StoreKind } from '../domain/storage.ts'
import { defineRepresentation, type Services } from './services.ts'

/** The pages (one HTML document; the script renders the page the path names). */
export const PAGE_PATHS = ['/', '/pickup', '/admin'] as const

/**
 * Where the built pages live: `dist/web` next to the bundle (dist/main.js) or, from the sources
 * (tsx, jest), the package's dist/web. Looked up per request, so a build made after start-up counts.
 */
export function webRoot(): string | undefined {
  return findWebRoot([path.resolve(__dirname, 'web'), path.resolve(__dirname, '..', '..', 'dist', 'web')])
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

/** The pages' CSP and headers: core's, shared with dns-manager's back office. */
export { webHelmetOptions }

export const ZSiteInfo = z.object({
  stores: z.array(z.enum(STORE_KINDS)),
  defaultExpireDays: z.number().int(),
  maxExpireDays: z.number().int(),
  defaultMaxDownloads: z.number().int(),
  maxDownloadsCap: z.number().int(),
  maxFileSizeBytes: z.number().int(),
  codeLength: z.number().int(),
  unlimitedEnabled: z.boolean(),
  /** Whether the pickup page shows previews, and up to which size (README "Previews"). */
  previewEnabled: z.boolean(),
  previewMaxBytes: z.number().int(),
  /** The most text (UTF-8 bytes) the send page takes in its text box (README "Text shares"). */
  textMaxBytes: z.number().int(),
})

/** Text typed or pasted into the send page: 1 MiB of UTF-8 (and never above maxFileSizeBytes). */
export const TEXT_MAX_BYTES = 1_048_576

/** The JSON text of GET /api/site, made again only when the settings or the enabled kinds changed. */
const lastText = new WeakMap<object, { settings: TSettings; kinds: string; text: string }>()
async function siteInfoText(s: Pick<Services, 'settings' | 'storage'>, headers: HeaderSink): Promise<string> {
  const settings = await s.settings.get()
  headers.setHeader('Cache-Control', 'no-store')
  const stores = s.storage.enabledKinds()
  const kinds = stores.join(',')
  let last = lastText.get(s.settings)
  if (last?.settings !== settings || last.kinds !== kinds) {
    last = { settings, kinds, text: JSON.stringify(siteInfo(settings, stores)) }
    lastText.set(s.settings, last)
  }
  return last.text
}

/**
 * GET /api/site, served two ways: as core's hot route for the exact path (every page load asks
 * it, and express costs it several times its own work; siteInfoRoute), and by this operation in
 * express for the rest (HEAD, a query string). Same headers and body either way, from one
 * function. The settings are read from the database on every request, so an admin's change shows
 * on the next one on every replica.
 */
export const siteInfoOperation = defineRepresentation({
  name: 'siteInfo',
  summary: 'What the send and pickup pages need: enabled storage kinds and the public limits',
  tags: ['public'],
  route: { method: 'get', path: '/api/site' },
  input: {},
  responses: { 200: { description: 'public site settings', schema: ZSiteInfo } },
  auth: publicAccess,
  errors: {},
  handler: (_input, { deps, headers }) => siteInfoText(deps, headers),
  respond(text, _req, res) {
    ;(res as Response).type('json').send(text)
  },
})

export const webOperations = [siteInfoOperation] as const

/** The hot route of GET /api/site (see siteInfoOperation). */
export function siteInfoRoute(s: Pick<Services, 'settings' | 'storage'>): HotRoute {
  return {
    path: siteInfoOperation.route.path,
    async handle(_req, headers) {
      return new HotAnswer(200, undefined, await siteInfoText(s, headers))
    },
  }
}

function siteInfo(settings: TSettings, stores: StoreKind[]): z.infer<typeof ZSiteInfo> {
  return {
    stores,
    defaultExpireDays: settings.defaultExpireDays,
    maxExpireDays: settings.maxExpireDays,
    defaultMaxDownloads: settings.defaultMaxDownloads,
    maxDownloadsCap: settings.maxDownloadsCap,
    maxFileSizeBytes: settings.maxFileSizeBytes,
    codeLength: settings.codeLength,
    unlimitedEnabled: settings.unlimitedEnabled,
    previewEnabled: settings.previewEnabled,
    previewMaxBytes: settings.previewMaxBytes,
    textMaxBytes: Math.min(TEXT_MAX_BYTES, settings.maxFileSizeBytes),
  }
}

/** The pages and their assets (not API operations). */
export function registerWeb(app: Express): void {
  serveWebBuild(app, {
    webRoot,
    pages: PAGE_PATHS,
    buildHint: 'pnpm --filter @quartet/pickup-share build',
    // A mistyped page address gets the site's own 404 page, not raw JSON (issue 20 item 6).
    notFoundPage: { apiPrefix: '/api/' },
  })
}
