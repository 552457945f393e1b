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
