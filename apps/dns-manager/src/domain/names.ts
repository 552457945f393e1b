import { domainToASCII } from 'node:url'
import { ApiError } from '@quartet/core/errors'

const LDH = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
/** Owner-name labels may also start with `_` (`_dmarc`, `_sip._tcp`). */
const OWNER_LABEL = /^_?[a-z0-9](?:[a-z0-9_-]{0,61}[a-z0-9])?$|^_[a-z0-9]$/

export const MAX_NAME_LENGTH = 253

function badField(field: string, message: string): ApiError {
  return new ApiError('bad_request', `${field}: ${message}`, { field, issues: [{ field, message }] })
}

/**
 * A subdomain label: LDH (1–63 characters, no leading or trailing hyphen), lowercased, IDN
 * converted to punycode (`bücher` → `xn--bcher-kva`).
 */
export function normaliseLabel(raw: string, field = 'subdomain'): string {
  const trimmed = raw.trim().toLowerCase()
  if (!trimmed) throw badField(field, 'must not be empty')
  if (trimmed.includes('.')) throw badField(field, 'must be a single label without dots')
  // eslint-disable-next-line no-control-regex
  const ascii = /^[\x00-\x7f]*$/.test(trimmed) ? trimmed : domainToASCII(trimmed)
  if (!ascii) throw badField(field, 'is not a valid internationalised label')
  if (ascii.length > 63) throw badField(field, 'must be at most 63 characters')
  if (!LDH.test(ascii))
    throw badField(field, 'must use letters, digits and hyphens, without a leading or trailing hyphen')
  return ascii
}

/** A fully qualified host name (MX/CNAME/NS/SRV targets), without the trailing dot. */
export function normaliseHostname(raw: string, field: string): string {
  let s = raw.trim().toLowerCase()
  if (s.endsWith('.')) s = s.slice(0, -1)
  if (!s) throw badField(field, 'must be a host name')
  if (s.length > MAX_NAME_LENGTH) throw badField(field, `must be at most ${MAX_NAME_LENGTH} characters`)
  const labels = s.split('.')
  for (const label of labels) {
    // eslint-disable-next-line no-control-regex
    const ascii = /^[\x00-\x7f]*$/.test(label) ? label : domainToASCII(label)
    if (!ascii || ascii.length > 63 || !OWNER_LABEL.test(ascii))
      throw badField(field, `${JSON.stringify(label)} is not a valid host name label`)
  }
  if (labels.length < 2) throw badField(field, 'must be a fully qualified host name')
  return labels.map((l) => (/^[\x20-\x7e]*$/.test(l) ? l : domainToASCII(l))).join('.')
}

/**
 * A record name relative to the subdomain: `@` is the subdomain itself; `*` only as the leftmost
 * label. Returns the normalised relative name (`@`, `www`, `*.dev`, `_dmarc`).
 */
export function normaliseRecordName(raw: string, fullDomain: string): string {
  let s = raw.trim().toLowerCase()
  if (s === '' || s === '@') return '@'
  if (s.endsWith('.')) {
    // A fully qualified name is accepted when it lies inside the subdomain.
    s = s.slice(0, -1)
    if (s === fullDomain) return '@'
    if (!s.endsWith(`.${fullDomain}`)) throw badField('name', `must lie inside ${fullDomain}`)
    s = s.slice(0, -(fullDomain.length + 1))
  }
  const labels = s.split('.')
  labels.forEach((label, i) => {
    if (label === '*') {
      if (i !== 0) throw badField('name', '`*` is allowed as the leftmost label only')
      return
    }
    // eslint-disable-next-line no-control-regex
    const ascii = /^[\x00-\x7f]*$/.test(label) ? label : domainToASCII(label)
    if (!ascii || ascii.length > 63 || !OWNER_LABEL.test(ascii))
      throw badField('name', `${JSON.stringify(label)} is not a valid label`)
    labels[i] = ascii
  })
  const relative = labels.join('.')
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
