import path from 'node:path'
import type { Express } from 'express'
import { findWebRoot, serveWebBuild, webHelmetOptions } from '@quartet/core/web'
import { publicAccess, reply } from '@quartet/core/operation'
import { freezeWithJson } from '@quartet/core/json-text'
import { z } from 'zod'
import type { TSettings } from '../domain/settings.ts'
import { STORE_KINDS, type StoreKind } from '../domain/storage.ts'
import { define } from './services.ts'

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
/** The last answer per settings store: a new object (and its JSON) only when the settings change. */
const lastAnswer = new WeakMap<
  object,
  { settings: TSettings; kinds: string; value: z.infer<typeof ZSiteInfo> }
>()

/**
 * GET /api/site: what the send and pickup pages need, asked on every page load, so a hot read
 * (answered before express at its exact path; express serves the rest: HEAD, a query string).
 * The settings are read on every request (through the settings store's own cache under its
 * version), so an admin's change shows on the next one on every replica; the answer keeps its
 * JSON while the settings stay the same object.
 */
export const siteInfoOperation = define({
  name: 'siteInfo',
  summary: 'What the send and pickup pages need: enabled storage kinds and the public limits',
  tags: ['public'],
  route: { method: 'get', path: '/api/site' },
  input: {},
  responses: { 200: { description: 'public site settings', schema: ZSiteInfo } },
  auth: publicAccess,
  errors: {},
  headers: { 'Cache-Control': 'no-store' },
  hot: {
    dependsOn:
      'the settings (the settings store) and the storage kinds this process has enabled (its configuration)',
    invalidatedBy:
      "an admin's settings change, which the settings store serves from the next request on, on every replica",
  },
  async handler(_input, { deps }) {
    const settings = await deps.settings.get()
    const stores = deps.storage.enabledKinds()
    const kinds = stores.join(',')
    let last = lastAnswer.get(deps.settings)
    if (last?.settings !== settings || last.kinds !== kinds) {
      last = { settings, kinds, value: freezeWithJson(siteInfo(settings, stores)) }
      lastAnswer.set(deps.settings, last)
    }
    return reply(200, last.value)
  },
})

export const webOperations = [siteInfoOperation] as const

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
