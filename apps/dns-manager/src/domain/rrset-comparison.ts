import ipaddr from 'ipaddr.js'
import { fqdnOf } from './names.ts'
import type { RecordRow } from './ports.ts'
import type { ServedRRset } from './provider.ts'
import { type RecordType, TTL_DEFAULT } from './record-rules.ts'
import { rdataOf } from './zone-file.ts'
import { asValues } from './views.ts'

/** RRsets as the database wants them and as the upstream serves them, and how the two compare. */

export const rrsetKey = (name: string, type: string) => `${name} ${type}`
export const splitKey = (key: string) => {
  const i = key.lastIndexOf(' ')
  return { name: key.slice(0, i), type: key.slice(i + 1) }
}

/**
 * The RRset the database wants for these rows (all of one name and type); no rows = absent.
 * Every record of an RRset has its TTL (dns-records.ts); the minimum only matters for rows a
 * write is changing right now.
 */
export function desiredRRset(name: string, type: string, rows: readonly RecordRow[]): ServedRRset {
  return {
    name,
    type,
    ttl: rows.length ? Math.min(...rows.map((r) => r.ttl)) : TTL_DEFAULT,
    records: rows.map((r) => rdataOf(asValues(r))),
  }
}

/** The desired RRsets of one subdomain's rows, keyed `${fqdn} ${type}` (pending deletes left out). */
export function desiredOfSubdomain(fullDomain: string, rows: readonly RecordRow[]): Map<string, ServedRRset> {
  const groups = new Map<string, RecordRow[]>()
  for (const r of rows) {
    if (r.state === 'pending_delete') continue
    const key = rrsetKey(fqdnOf(r.name, fullDomain), r.type)
    groups.set(key, [...(groups.get(key) ?? []), r])
  }
  return new Map(
    [...groups].map(([key, group]) => {
      const { name, type } = splitKey(key)
      return [key, desiredRRset(name, type as RecordType, group)]
    }),
  )
}

/** The bytes of a TXT/CAA value in presentation format: quoted or bare strings, `\X` and `\DDD` escapes. */
function presentationBytes(text: string): Buffer[] {
  const strings: Buffer[] = []
  let i = 0
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === '\t') i++
    if (i >= text.length) break
    const quoted = text[i] === '"'
    if (quoted) i++
    const bytes: number[] = []
    while (i < text.length) {
      const c = text[i]!
      if (quoted ? c === '"' : c === ' ' || c === '\t') break
      if (c === '\\' && i + 1 < text.length) {
        const ddd = /^\d{3}/.exec(text.slice(i + 1, i + 4))
        if (ddd) {
          bytes.push(Number(ddd[0]) & 0xff)
          i += 4
        } else {
          bytes.push(...Buffer.from(text[i + 1]!, 'utf8'))
          i += 2
        }
        continue
      }
      const cp = text.codePointAt(i)!
      const ch = String.fromCodePoint(cp)
      bytes.push(...Buffer.from(ch, 'utf8'))
      i += ch.length
    }
    if (quoted) i++
    strings.push(Buffer.from(bytes))
  }
  return strings
}

/** One record's RDATA in a form two spellings of the same data share (case, escapes, IPv6 forms). */
export function canonicalRdata(type: string, rdata: string): string {
  const text = rdata.trim()
  switch (type) {
    case 'A':
    case 'AAAA':
      try {
        return ipaddr.parse(text).toNormalizedString()
      } catch {
        return text.toLowerCase()
      }
    case 'TXT':
      return Buffer.concat(presentationBytes(text)).toString('hex')
    case 'CAA': {
      const m = /^(\d+)\s+(\S+)\s+(.*)$/s.exec(text)
      if (!m) return text
      return `${Number(m[1])} ${m[2]!.toLowerCase()} ${Buffer.concat(presentationBytes(m[3]!)).toString('hex')}`
    }
    default:
      return text.toLowerCase().replace(/\s+/g, ' ')
  }
}

/** Whether the upstream serves what the database wants (both absent counts as the same). */
export function sameRRset(served: ServedRRset | undefined, desired: ServedRRset | undefined): boolean {
  const a = served?.records.length ? served : undefined
  const b = desired?.records.length ? desired : undefined
  if (!a || !b) return !a && !b
  if (a.ttl !== b.ttl) return false
  const canon = (r: ServedRRset) =>
    r.records
      .map((x) => canonicalRdata(r.type, x))
      .sort()
      .join('\n')
  return canon(a) === canon(b)
}
