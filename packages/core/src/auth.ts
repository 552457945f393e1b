import { hash, randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto'
import { promisify } from 'node:util'
import ipaddr from 'ipaddr.js'

// --- header parsing ----------------------------------------------------------------------------

export type BearerResult = { kind: 'ok'; token: string } | { kind: 'missing' } | { kind: 'wrong_scheme' }

/**
 * `Authorization: Bearer <token>`. The scheme is case-insensitive (RFC 9110 §11.1), surrounding
 * spaces are tolerated, and an empty token counts as a missing header.
 */
export function parseBearer(header: string | string[] | undefined): BearerResult {
  const value = (Array.isArray(header) ? header[0] : header)?.trim()
  if (!value) return { kind: 'missing' }
  const match = /^(\S+)(?:\s+(.*))?$/.exec(value)
  if (!match || match[1]!.toLowerCase() !== 'bearer') return { kind: 'wrong_scheme' }
  const token = (match[2] ?? '').trim()
  return token ? { kind: 'ok', token } : { kind: 'missing' }
}

export interface KeyAndSecret {
  key: string
  secret: string
}

/**
 * Key + secret credentials: `X-API-Key` and `X-API-Secret` (preferred), or
 * `Authorization: Bearer KEY:SECRET` split at the first `:` (a secret may itself contain `:`).
 * Returns null when neither form is complete.
 */
export function parseKeyAndSecret(
  headers: Record<string, string | string[] | undefined>,
): KeyAndSecret | null {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.trim() ?? ''
  const key = first(headers['x-api-key'])
  const secret = first(headers['x-api-secret'])
  if (key && secret) return { key, secret }
  if (key || secret) return null
  const bearer = parseBearer(headers.authorization)
  if (bearer.kind !== 'ok') return null
  const colon = bearer.token.indexOf(':')
  if (colon <= 0 || colon === bearer.token.length - 1) return null
  return { key: bearer.token.slice(0, colon), secret: bearer.token.slice(colon + 1) }
}

// --- tokens -----------------------------------------------------------------------------------

/** A random token with a readable prefix, e.g. `sk-qk-v1-` + 256 bits as hex. */
export function generateToken(prefix: string, bytes = 32): string {
  if (bytes < 16) throw new Error('tokens need at least 128 bits of randomness')
  return `${prefix}${randomBytes(bytes).toString('hex')}`
}

/** Tokens are stored as SHA-256 hex: they are high-entropy, so a slow hash adds nothing. */
export function hashToken(token: string): string {
  // One-shot: no Hash object per call (every authenticated request hashes its key).
  return hash('sha256', token, 'hex')
}

/**
 * Constant-time equality of two of hashToken's digests (say, a presented secret's and a stored
 * one): their length is no secret, so the bytes are compared as they are, without hashing both
 * sides again as safeEqual does. Different lengths (not two such digests) are unequal.
 */
export function sameDigest(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a, 'latin1'), Buffer.from(b, 'latin1'))
}

/**
 * Constant-time equality, safe for inputs of unequal length: both sides are hashed to 32 bytes
 * first, so neither the comparison nor an early length check leaks where they differ.
 */
export function safeEqual(a: string, b: string): boolean {
  // One-shot hashes: no Hash object per side (every authenticated request compares its secret).
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer')) && a.length === b.length
}

/**
 * The label form of a key: its prefix and first 3 characters of the secret part, `...`, and the
 * last 3 characters (`sk-qk-v1-0e6...1c9`). Never enough to use the key.
 */
export function maskToken(token: string, keep = 3): string {
  const dash = token.lastIndexOf('-')
  const prefix = dash >= 0 && dash < token.length - 1 ? token.slice(0, dash + 1) : ''
  const body = token.slice(prefix.length)
  if (body.length <= keep * 2) return `${prefix}${'*'.repeat(body.length)}`
  return `${prefix}${body.slice(0, keep)}...${body.slice(-keep)}`
}

// --- passwords --------------------------------------------------------------------------------

const scrypt = promisify(scryptCb) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>

const SCRYPT = { N: 1 << 15, r: 8, p: 1, keylen: 32 }

/** scrypt (RFC 7914) with a random salt; the parameters travel with the hash so they can be raised later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16)
  const { N, r, p, keylen } = SCRYPT
  const hash = await scrypt(password, salt, keylen, { N, r, p, maxmem: 128 * N * r * 2 })
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64url')}$${hash.toString('base64url')}`
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number]
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0) || N > 1 << 20) return false
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  // An empty (or truncated) hash would make any password "match" a zero-length derived key.
  if (salt.length === 0 || expected.length < 16) return false
  try {
    const actual = await scrypt(password, salt, expected.length, { N, r, p, maxmem: 128 * N * r * 2 })
    return actual.length === expected.length && timingSafeEqual(actual, expected)
  } catch {
    // Parameters scrypt refuses (N not a power of two, too much memory): a malformed hash, not a match.
    return false
  }
}

// --- IP allow lists ---------------------------------------------------------------------------

type ParsedRange = [ipaddr.IPv4 | ipaddr.IPv6, number]

/** Parses CIDRs or single addresses (v4, v6); throws with the bad entry named. */
export function parseAllowList(entries: readonly string[]): ParsedRange[] {
  return entries.map((entry) => {
    const s = entry.trim()
    try {
      if (s.includes('/')) {
        const [addr, bits] = ipaddr.parseCIDR(s)
        // `::ffff:a.b.c.d/n` is the v4 range /n-96 only when n >= 96; a shorter prefix is wider than
        // the mapped block and stays an IPv6 range (a negative v4 prefix would match everything).
        if (addr.kind() === 'ipv6' && bits < 96) return [addr, bits]
        return [
          normalise(addr),
          addr.kind() === 'ipv6' && normalise(addr).kind() === 'ipv4' ? bits - 96 : bits,
        ]
      }
      const addr = normalise(ipaddr.parse(s))
      return [addr, addr.kind() === 'ipv4' ? 32 : 128]
    } catch {
      throw new Error(`${JSON.stringify(entry)} is not an IP address or CIDR range`)
    }
  })
}

/** `::ffff:10.0.0.1` and `10.0.0.1` are one address. */
function normalise(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr
}

export function isValidCidrOrIp(entry: string): boolean {
  try {
    parseAllowList([entry])
    return true
  } catch {
    return false
  }
}

/**
 * Whether `ip` is on the allow list. An empty list allows any address; an unparseable client
 * address is never allowed by a non-empty list.
 */
export function ipAllowed(ip: string | undefined, allowList: readonly string[] | ParsedRange[]): boolean {
  if (allowList.length === 0) return true
  if (!ip) return false
  let addr: ipaddr.IPv4 | ipaddr.IPv6
  try {
    addr = normalise(ipaddr.parse(ip))
  } catch {
    return false
  }
  const ranges =
    typeof allowList[0] === 'string' ? parseAllowList(allowList as string[]) : (allowList as ParsedRange[])
  return ranges.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits))
}
