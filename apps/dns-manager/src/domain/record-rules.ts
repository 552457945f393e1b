import { ApiError } from '@quartet/core/errors'
import ipaddr from 'ipaddr.js'
import { fqdnOf, normaliseRecordName, normaliseTarget } from './names.ts'

// What a DNS record may hold, and what it must not break among its subdomain's other records:
// the rules every record write (dns-records.ts) and /nic/update (dyndns.ts) check. How a record is
// written out is zone-file.ts; how RRsets are compared with the upstream's, rrset-comparison.ts.

export const RECORD_TYPES = ['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SRV', 'CAA'] as const
export type RecordType = (typeof RECORD_TYPES)[number]
export const TTL_MIN = 60
export const TTL_MAX = 86_400
export const TTL_DEFAULT = 600
export const CAA_TAGS = ['issue', 'issuewild', 'iodef'] as const
export const TXT_MAX_LENGTH = 4096

/** What a record holds once validated; `name` is relative to the subdomain. */
export interface RecordValues {
  name: string
  type: RecordType
  content: string
  ttl: number
  priority: number | null
  weight: number | null
  port: number | null
  flag: number | null
  tag: string | null
}

export interface RecordInput {
  name?: string | undefined
  type: RecordType
  content: string
  ttl?: number | undefined
  priority?: number | undefined
  weight?: number | undefined
  port?: number | undefined
  flag?: number | undefined
  tag?: string | undefined
}

function bad(field: string, message: string): ApiError {
  return new ApiError('bad_request', `${field}: ${message}`, { field, issues: [{ field, message }] })
}

function intIn(value: number | undefined, field: string, min: number, max: number): number {
  if (value === undefined) throw bad(field, 'is required for this record type')
  if (!Number.isInteger(value) || value < min || value > max)
    throw bad(field, `must be a whole number from ${min} to ${max}`)
  return value
}

/** ipaddr.js range names that are fine to publish; everything else is refused unless allowed. */
const PUBLIC_RANGES = new Set(['unicast'])
const DOCUMENTATION_V4 = ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24'].map((c) => ipaddr.parseCIDR(c))
const DOCUMENTATION_V6 = [ipaddr.parseCIDR('2001:db8::/32'), ipaddr.parseCIDR('3fff::/20')]

export function validateAddress(type: 'A' | 'AAAA', raw: string, allowPrivate: boolean): string {
  const s = raw.trim()
  if (s.includes('%'))
    throw bad(
      'content',
      'must be an address without a zone index (%…): zone indexes mean nothing outside one host',
    )
  const ok = type === 'A' ? ipaddr.IPv4.isValidFourPartDecimal(s) : ipaddr.IPv6.isValid(s) && s.includes(':')
  if (!ok) throw bad('content', `must be a valid ${type === 'A' ? 'IPv4' : 'IPv6'} address`)
  const addr = ipaddr.parse(s)
  if (!allowPrivate) {
    const docs = addr.kind() === 'ipv4' ? DOCUMENTATION_V4 : DOCUMENTATION_V6
    const isDoc = docs.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits))
    if (isDoc || !PUBLIC_RANGES.has(addr.range()))
      throw bad(
        'content',
        `${s} is in a ${isDoc ? 'documentation' : addr.range()} range (private, loopback, link-local, documentation and reserved ranges are refused)`,
      )
  }
  return addr.toString()
}

/** Validates one record against its type's rules; the result is what gets stored. */
export function validateRecord(
  input: RecordInput,
  fullDomain: string,
  options: { allowPrivateAddresses: boolean },
): RecordValues {
  const name = normaliseRecordName(input.name ?? '@', fullDomain)
  const ttl = input.ttl === undefined ? TTL_DEFAULT : intIn(input.ttl, 'ttl', TTL_MIN, TTL_MAX)
  const base = {
    name,
    type: input.type,
    ttl,
    priority: null,
    weight: null,
    port: null,
    flag: null,
    tag: null,
  }
  const content = input.content
  switch (input.type) {
    case 'A':
    case 'AAAA':
      return { ...base, content: validateAddress(input.type, content, options.allowPrivateAddresses) }
    case 'CNAME': {
      const target = normaliseTarget(content, 'content', 'domain')
      if (target === fqdnOf(name, fullDomain)) throw bad('content', 'a CNAME must not point to itself')
      return { ...base, content: target }
    }
    case 'NS':
      return { ...base, content: normaliseTarget(content, 'content', 'host') }
    case 'MX': {
      const priority = intIn(input.priority, 'priority', 0, 65535)
      // Null MX (RFC 7505): "0 ." says the domain accepts no mail.
      if (content.trim() === '.') {
        if (priority !== 0) throw bad('priority', 'a null MX (content ".") has priority 0 (RFC 7505)')
        return { ...base, content: '.', priority }
      }
      return { ...base, content: normaliseTarget(content, 'content', 'host'), priority }
    }
    case 'SRV':
      return {
        ...base,
        // "." : the service is decidedly not available here (RFC 2782).
        content: content.trim() === '.' ? '.' : normaliseTarget(content, 'content', 'host'),
        priority: intIn(input.priority, 'priority', 0, 65535),
        weight: intIn(input.weight, 'weight', 0, 65535),
        port: intIn(input.port, 'port', 0, 65535),
      }
    case 'CAA': {
      const tag = (input.tag ?? '').trim().toLowerCase()
      if (!(CAA_TAGS as readonly string[]).includes(tag))
        throw bad('tag', `must be one of ${CAA_TAGS.join(', ')}`)
      const flag = input.flag ?? 0
      if (flag !== 0 && flag !== 128)
        throw bad('flag', 'must be 0, or 128 (issuer critical); the other bits are reserved (RFC 8659 §4.1)')
      return { ...base, content: validateCaaValue(tag as (typeof CAA_TAGS)[number], content), flag, tag }
    }
    case 'TXT': {
      if (Buffer.byteLength(content, 'utf8') > TXT_MAX_LENGTH)
        throw bad('content', `must be at most ${TXT_MAX_LENGTH} bytes`)
      return { ...base, content }
    }
  }
}

const CAA_LABEL = String.raw`[A-Za-z0-9](?:-*[A-Za-z0-9])*`
const CAA_PARAM = String.raw`${CAA_LABEL}[ \t]*=[ \t]*[\x21-\x3a\x3c-\x7e]*`
/** RFC 8659 §4.2: `[issuer-domain-name] [";" [parameter *(";" parameter)]]`, blanks allowed between. */
const CAA_ISSUE = new RegExp(
  String.raw`^[ \t]*(?:${CAA_LABEL}(?:\.${CAA_LABEL})*[ \t]*)?(?:;[ \t]*(?:${CAA_PARAM}(?:[ \t]*;[ \t]*${CAA_PARAM})*[ \t]*)?)?$`,
)

/**
 * A CAA value (RFC 8659): `issue`/`issuewild` take an issuer domain name with optional
 * `; key=value` parameters, or `;` alone (no CA may issue); `iodef` takes a `mailto:`, `http:`
 * or `https:` URL.
 */
function validateCaaValue(tag: (typeof CAA_TAGS)[number], raw: string): string {
  const value = raw.trim()
  if (!value || value.length > 1024) throw bad('content', 'must be 1 to 1024 characters')
  if (tag === 'iodef') {
    let url: URL | null
    try {
      url = new URL(value)
    } catch {
      url = null
    }
    if (!url || !['mailto:', 'http:', 'https:'].includes(url.protocol))
      throw bad('content', 'an iodef value is a mailto:, http: or https: URL (RFC 8659 §4.4)')
    return value
  }
  if (!CAA_ISSUE.test(value))
    throw bad(
      'content',
      `an ${tag} value is an issuer domain name, optionally followed by "; key=value" parameters, or ";" alone (RFC 8659 §4.2), e.g. "letsencrypt.org"`,
    )
  return value
}

/** A name with a CNAME may hold nothing else, and holds one CNAME at most (RFC 1034 §3.6.2). */
export function checkCnameRules(
  candidate: RecordValues,
  others: ReadonlyArray<{ name: string; type: string }>,
): void {
  const sameName = others.filter((r) => r.name === candidate.name)
  if (candidate.type === 'CNAME' && sameName.length > 0)
    throw bad('type', `a CNAME cannot be added at ${candidate.name}: the name already has other records`)
  if (candidate.type !== 'CNAME' && sameName.some((r) => r.type === 'CNAME'))
    throw bad('type', `${candidate.name} has a CNAME, so it cannot hold other records`)
}

const POINTING = ['MX', 'NS', 'SRV']

/**
 * What records point to, against the subdomain's other records: a null MX stands alone at its
 * name (RFC 7505 §3), and MX, NS and SRV never point to one of the subdomain's aliases (RFC 2181
 * §10.3, RFC 2782), nor can a name they point to become one.
 */
export function checkTargetRules(
  candidate: RecordValues,
  others: ReadonlyArray<{ name: string; type: string; content: string }>,
  fullDomain: string,
): void {
  if (candidate.type === 'MX') {
    const mx = others.filter((r) => r.type === 'MX' && r.name === candidate.name)
    if (candidate.content === '.' && mx.length)
      throw bad('content', `a null MX must be the only MX at ${candidate.name} (RFC 7505 §3)`)
    if (candidate.content !== '.' && mx.some((r) => r.content === '.'))
      throw bad('content', `${candidate.name} has a null MX (it accepts no mail), so it takes no other MX`)
  }
  if (POINTING.includes(candidate.type)) {
    const alias = others.find((r) => r.type === 'CNAME' && fqdnOf(r.name, fullDomain) === candidate.content)
    if (alias)
      throw bad(
        'content',
        `${candidate.content} is an alias (CNAME) here; ${candidate.type} records must point to a name with addresses (RFC 2181 §10.3)`,
      )
  }
  if (candidate.type === 'CNAME') {
    const self = fqdnOf(candidate.name, fullDomain)
    const pointing = others.find((r) => POINTING.includes(r.type) && r.content === self)
    if (pointing)
      throw bad(
        'name',
        `the ${pointing.type} record at ${pointing.name} points to ${self}, so it cannot be an alias (RFC 2181 §10.3)`,
      )
  }
}

/**
 * Delegations (NS) over the whole set of a subdomain's records after a change, as Cloudflare
 * and deSEC enforce them. A name with NS records is delegated: resolvers are referred to its
 * nameservers, so
 *
 * - it may hold nothing but NS (no A, TXT, CNAME… beside them), and NS never sits at a wildcard;
 * - nothing below it is ever answered, except A/AAAA glue: addresses of the names its NS records
 *   point to, which PowerDNS hands out with the referral.
 *
 * `candidate` is the record being written, so the message can say which side is refused.
 */
export function checkDelegationRules(
  records: ReadonlyArray<{ name: string; type: string; content: string }>,
  candidate: { name: string; type: string },
  fullDomain: string,
): void {
  const delegated = new Map<string, string[]>()
  for (const r of records)
    if (r.type === 'NS') delegated.set(r.name, [...(delegated.get(r.name) ?? []), r.content])
  for (const name of delegated.keys()) {
    if (name === '*' || name.startsWith('*.'))
      throw bad('name', `NS records cannot be at a wildcard name (${name})`)
    const beside = records.find((r) => r.name === name && r.type !== 'NS')
    if (beside)
      throw bad(
        'type',
        candidate.type === 'NS'
          ? `${name} holds ${beside.type} records, so it cannot be delegated with NS (a delegated name holds only NS)`
          : `${name} is delegated (NS), so it cannot hold ${beside.type} records beside its NS records`,
      )
  }
  for (const r of records) {
    const above = ancestorsOf(r.name).find((a) => delegated.has(a))
    if (above === undefined) continue
    const targets = delegated.get(above)!
    if ((r.type === 'A' || r.type === 'AAAA') && targets.includes(fqdnOf(r.name, fullDomain))) continue
    const glue = `only A/AAAA glue for its nameservers (${targets.join(', ')}) may be kept below it`
    if (candidate.type === 'NS' && candidate.name === above)
      throw bad(
        'name',
        `${above} cannot be delegated while ${r.name} holds ${r.type} records below it: a delegated name's records are never answered; ${glue}`,
      )
    throw bad(
      'name',
      `${r.name} lies below ${above}, which is delegated (NS): its records would never be answered; ${glue}`,
    )
  }
}

/** The names above a relative name, nearest first: `a.b` → `b`, `@`; `@` has none. */
function ancestorsOf(name: string): string[] {
  if (name === '@') return []
  const labels = name.split('.')
  return [...labels.slice(1).map((_, i) => labels.slice(i + 1).join('.')), '@']
}
