import { randomBytes } from 'node:crypto'
import { z } from 'zod'

// C0 controls, DEL and C1 controls: CR/LF among them, which would split headers.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/
// Bidi embeddings/overrides/isolates and marks: allowed in names, dropped from download names so
// "gpj.exe" cannot be shown as "exe.jpg".
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

/** A file name as a sender gives it: no path separators or control characters, ≤ 255 bytes. */
export const ZFileName = z
  .string()
  .min(1, 'must not be empty')
  .refine((n) => !CONTROL.test(n), 'must not contain control characters (CR, LF, NUL, …)')
  .refine((n) => !/[/\\]/.test(n), 'must not contain / or \\')
  .refine((n) => n !== '.' && n !== '..', 'must not be . or ..')
  .refine((n) => n.trim().length > 0, 'must not be blank')
  .refine((n) => Buffer.byteLength(n, 'utf8') <= 255, 'must be at most 255 bytes (UTF-8)')

/** The media type a sender declares: `type/subtype` with optional parameters, nothing exotic. */
export const ZMediaType = z
  .string()
  .max(255)
  .regex(
    /^[\w.+-]+\/[\w.+-]+(\s*;\s*[\w.+-]+=("[^"\r\n]*"|[\w.+-]+))*$/,
    'must be a media type such as text/plain',
  )

/**
 * The storage pathname the server chooses: 128 random bits, then the name reduced to safe ASCII,
 * so keys are valid on every store and never carry separators, dots at the start or spaces.
 */
export function choosePathname(name: string): string {
  const safe = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+/, '')
    .slice(-120)
  return `${randomBytes(16).toString('hex')}/${safe || 'file'}`
}

/** The name offered in Content-Disposition. */
export function downloadName(name: string): string {
  return name.replace(BIDI, '').replace(CONTROL, '') || 'download'
}

/**
 * The plain-ASCII `filename` sent beside `filename*` for clients that ignore RFC 8187: accents
 * dropped (café → cafe), any other non-ASCII character as `_`, and no `%`, which some clients
 * would percent-decode.
 */
export function asciiFallbackName(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^\x20-\x7e]/gu, '_')
    .replace(/%/g, '_')
}

const INLINE_SAFE = new Set([
  'application/pdf',
  'application/zip',
  'application/gzip',
  'application/x-tar',
  'application/x-7z-compressed',
  'application/json',
  'audio/mpeg',
  'audio/ogg',
  'audio/wav',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'text/plain',
  'text/csv',
  'video/mp4',
  'video/webm',
])

/**
 * The Content-Type of a download: the declared type when it is on a list that no browser runs
 * as a page or script (never html, svg, xml or javascript), else application/octet-stream.
 */
export function safeContentType(type: string): string {
  const base = type.split(';')[0]!.trim().toLowerCase()
  return INLINE_SAFE.has(base) ? base : 'application/octet-stream'
}

/** What the pickup page does with a preview: show text, an image, play audio or video, view a PDF. */
export type PreviewKind = 'text' | 'image' | 'audio' | 'video' | 'pdf'

/**
 * The only types a preview is served as (README "Previews"): none of them is run as a page or
 * script by a browser. Everything else (text/html, image/svg+xml, xml, javascript, …) is never
 * previewed, only downloaded as an attachment.
 */
const PREVIEW_TYPES: Record<string, { kind: PreviewKind; contentType: string }> = {
  'text/plain': { kind: 'text', contentType: 'text/plain; charset=utf-8' },
  'image/png': { kind: 'image', contentType: 'image/png' },
  'image/jpeg': { kind: 'image', contentType: 'image/jpeg' },
  'image/gif': { kind: 'image', contentType: 'image/gif' },
  'image/webp': { kind: 'image', contentType: 'image/webp' },
  'image/avif': { kind: 'image', contentType: 'image/avif' },
  'audio/mpeg': { kind: 'audio', contentType: 'audio/mpeg' },
  'audio/ogg': { kind: 'audio', contentType: 'audio/ogg' },
  'audio/wav': { kind: 'audio', contentType: 'audio/wav' },
  'audio/x-wav': { kind: 'audio', contentType: 'audio/wav' },
  'audio/webm': { kind: 'audio', contentType: 'audio/webm' },
  'audio/mp4': { kind: 'audio', contentType: 'audio/mp4' },
  'audio/aac': { kind: 'audio', contentType: 'audio/aac' },
  'audio/flac': { kind: 'audio', contentType: 'audio/flac' },
  'video/mp4': { kind: 'video', contentType: 'video/mp4' },
  'video/webm': { kind: 'video', contentType: 'video/webm' },
  'video/ogg': { kind: 'video', contentType: 'video/ogg' },
  'application/pdf': { kind: 'pdf', contentType: 'application/pdf' },
}

/** The preview of a declared type, or null when it is never previewed. */
export function previewOf(type: string): { kind: PreviewKind; contentType: string } | null {
  return PREVIEW_TYPES[type.split(';')[0]!.trim().toLowerCase()] ?? null
}

/**
 * The Content-Security-Policy of a preview response, for when it is opened on its own: nothing it
 * could load or run. `sandbox` gives it a unique origin with no scripts, forms, popups or plugins'
 * access to this site; only the pickup page may frame it. Chromium's PDF viewer runs in a
 * sandboxed document (its viewer is an extension frame of its own; the browser test proves the
 * PDF renders), so PDFs get the same policy.
 */
export const PREVIEW_POLICY =
  "default-src 'none'; frame-ancestors 'self'; form-action 'none'; base-uri 'none'; sandbox"
