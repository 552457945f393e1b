import { ApiError } from '@quartet/core/errors'
import { toASCII, toUnicode } from 'tr46'

/**
 * Names: subdomain labels, owner names of records, and the host or domain names records point to.
 * Internationalised labels follow IDNA2008: UTS #46 non-transitional processing (the `tr46`
 * library: mapping, punycode, hyphen, joiner and bidi rules, lengths), then RFC 5892's rule that
 * a label is made of letters, digits, combining marks and hyphens, which refuses the symbols and
 * emoji UTS #46 still lets through. `xn--` labels must decode to such a label.
 */

export const MAX_NAME_LENGTH = 253

const LDH = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
/** Owner-name labels may hold `_` anywhere (`_dmarc`, `_`, `x_`; RFC 2181 §11), never lead or end with `-`. */
const OWNER_LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/
/** RFC 5892 §2.1 LetterDigits (plus the hyphen): what an IDNA2008 U-label is made of. */
const IDNA2008_CHARS = /^[\p{Ll}\p{Lu}\p{Lo}\p{Nd}\p{Lm}\p{Mn}\p{Mc}-]+$/u
const IDNA_OPTIONS = {
  checkBidi: true,
  checkHyphens: true,
  checkJoiners: true,
  useSTD3ASCIIRules: true,
  transitionalProcessing: false,
  verifyDNSLength: true,
}

function badField(field: string, message: string): ApiError {
  return new ApiError('bad_request', `${field}: ${message}`, { field, issues: [{ field, message }] })
}

// eslint-disable-next-line no-control-regex
const isAscii = (s: string) => /^[\x00-\x7f]*$/.test(s)

/**
 * One internationalised label (non-ASCII, or ASCII starting `xn--`) → its A-label, or null when
 * it is not a valid IDNA2008 label.
 */
function idnaLabel(label: string): string | null {
  if (label.includes('.')) return null
  const ascii = toASCII(label, IDNA_OPTIONS)
  if (!ascii) return null
  const unicode = toUnicode(ascii, IDNA_OPTIONS)
  if (unicode.error || !IDNA2008_CHARS.test(unicode.domain)) return null
  return ascii
}

/** A label of a host name: LDH (RFC 1123), or an IDNA2008 label (as its A-label). */
function hostLabel(raw: string, field: string): string {
  const label = raw.toLowerCase()
  if (!isAscii(label) || label.startsWith('xn--')) {
    const a = idnaLabel(label)
    if (!a) throw badField(field, `${JSON.stringify(raw)} is not a valid internationalised label (IDNA2008)`)
    return a
  }
  if (!LDH.test(label))
    throw badField(
      field,
      `${JSON.stringify(raw)} is not a valid host name label (letters, digits and inner hyphens, 1–63 characters)`,
    )
  // `ab--…` is reserved for IDNA's future (RFC 5891 §4.2.3.1); only `xn--` is in use.
  if (label.slice(2, 4) === '--')
    throw badField(
      field,
      `${JSON.stringify(raw)}: labels with "--" in the third and fourth places are reserved`,
    )
  return label
}

/** A label of an owner name or alias target: a host label, or one with underscores. */
function ownerLabel(raw: string, field: string): string {
  const label = raw.toLowerCase()
  if (isAscii(label) && label.includes('_')) {
    if (!OWNER_LABEL.test(label))
      throw badField(
        field,
        `${JSON.stringify(raw)} is not a valid label (1–63 letters, digits, _ and inner -)`,
      )
    return label
  }
  return hostLabel(raw, field)
}

/**
 * A subdomain label: LDH (1–63 characters, no leading or trailing hyphen), lowercased, IDN
 * converted to punycode (`bücher` → `xn--bcher-kva`) under IDNA2008.
 */
export function normaliseLabel(raw: string, field = 'subdomain'): string {
  const trimmed = raw.trim()
  if (!trimmed) throw badField(field, 'must not be empty')
  if (trimmed.includes('.')) throw badField(field, 'must be a single label without dots')
  return hostLabel(trimmed, field)
}

/** An IP address written where a name belongs (RFC 1123 §2.1: a top-level label is never all digits). */
function looksLikeAddress(name: string): boolean {
  return name.includes(':') || /^[0-9]+$/.test(name.split('.').at(-1) ?? '')
}

/**
 * A fully qualified name that records point to, without the trailing dot. `host`: MX, NS and SRV
 * targets must be host names (LDH/IDN labels; RFC 2181 §10.3, RFC 2782); alias targets (CNAME)
 * may hold `_` labels. IP literals are refused: a target is a name that has addresses.
 */
export function normaliseTarget(raw: string, field: string, kind: 'host' | 'domain'): string {
  let s = raw.trim()
  if (s.endsWith('.')) s = s.slice(0, -1)
  if (!s) throw badField(field, 'must be a host name')
  if (looksLikeAddress(s))
    throw badField(field, `${raw.trim()} is an IP address; a target must be a host name (RFC 2181 §10.3)`)
  const labels = s.split('.')
  if (labels.length < 2) throw badField(field, 'must be a fully qualified host name')
  const out = labels.map((l) => {
    if (!l) throw badField(field, 'must not hold an empty label')
    return kind === 'host' ? hostLabel(l, field) : ownerLabel(l, field)
  })
  const name = out.join('.')
  if (name.length > MAX_NAME_LENGTH) throw badField(field, `must be at most ${MAX_NAME_LENGTH} characters`)
  return name
}

/** A fully qualified host name (zones, WHOIS), without the trailing dot. */
export function normaliseHostname(raw: string, field: string): string {
  return normaliseTarget(raw, field, 'host')
}

/**
 * A record name relative to the subdomain: `@` is the subdomain itself; `*` only as the leftmost
 * label. A name ending in the subdomain's full name, with or without the trailing dot, is taken as
 * fully qualified (`www.h.example.org` → `www`), as Cloudflare does, rather than doubled. Returns
 * the normalised relative name (`@`, `www`, `*.dev`, `_dmarc`).
 */
export function normaliseRecordName(raw: string, fullDomain: string): string {
  let s = raw.trim().toLowerCase()
  if (s === '' || s === '@') return '@'
  const qualified = s.endsWith('.')
  if (qualified) s = s.slice(0, -1)
  if (s === fullDomain) return '@'
  if (s.endsWith(`.${fullDomain}`)) s = s.slice(0, -(fullDomain.length + 1))
  else if (qualified) throw badField('name', `must lie inside ${fullDomain}`)
  const labels = s.split('.')
  const out = labels.map((label, i) => {
    if (label === '*') {
      if (i !== 0) throw badField('name', '`*` is allowed as the leftmost label only')
      return label
    }
    if (!label) throw badField('name', 'must not hold an empty label')
    return ownerLabel(label, 'name')
  })
  const relative = out.join('.')
  if (fqdnOf(relative, fullDomain).length > MAX_NAME_LENGTH)
    throw badField('name', `the full name must be at most ${MAX_NAME_LENGTH} characters`)
  return relative
}

export function fqdnOf(relativeName: string, fullDomain: string): string {
  return relativeName === '@' ? fullDomain : `${relativeName}.${fullDomain}`
}

/**
 * The label directly under `zone` that a name lies at or under (`www.web.example.org` in
 * `example.org` → `web`): the label a subdomain would own. Null for the zone's apex and names
 * outside it.
 */
export function ownerLabelOf(zone: string, fqdn: string): string | null {
  if (!fqdn.endsWith(`.${zone}`)) return null
  const above = fqdn.slice(0, -(zone.length + 1))
  return above.slice(above.lastIndexOf('.') + 1) || null
}

/** Whether a label could be registered as a subdomain (LDH), i.e. whether the namespace under it is dns-manager's. */
export function isRegistrableLabel(label: string): boolean {
  return LDH.test(label)
}
