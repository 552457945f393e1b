import { type RecordValues, TTL_DEFAULT, TTL_MIN } from './record-rules.ts'

// A record in the zone-file presentation format (RFC 1035 §5.1), what PowerDNS's API takes as
// `content`, and the BIND zone files of a subdomain's export.

/** TXT data as 255-byte character-strings (RFC 1035 §3.3.14), never splitting a UTF-8 sequence. */
export function splitTxt(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8')
  const chunks: string[] = []
  let start = 0
  while (start < bytes.length) {
    let end = Math.min(start + 255, bytes.length)
    // Step back off a UTF-8 continuation byte so each chunk decodes on its own.
    while (end < bytes.length && end > start && (bytes[end]! & 0xc0) === 0x80) end--
    chunks.push(bytes.subarray(start, end).toString('utf8'))
    start = end
  }
  return chunks.length ? chunks : ['']
}

/**
 * A character-string in presentation format (RFC 1035 §5.1): quoted, `"` and `\\` escaped, and
 * control bytes written `\\DDD`, so that a newline or a tab never reaches a zone file raw and
 * BIND and PowerDNS read back the same bytes (UTF-8 stays as it is: both take 8-bit bytes).
 */
function quote(s: string): string {
  let out = '"'
  for (const ch of s) {
    const code = ch.codePointAt(0)!
    if (ch === '"' || ch === '\\') out += `\\${ch}`
    else if (code < 0x20 || code === 0x7f) out += `\\${String(code).padStart(3, '0')}`
    else out += ch
  }
  return `${out}"`
}

/** A target with its trailing dot; the root (`.`, a null MX or SRV) as it is. */
const dotted = (name: string) => (name === '.' ? '.' : `${name}.`)

/** The record's RDATA in zone-file presentation format (what PowerDNS's API takes as `content`). */
export function rdataOf(r: RecordValues): string {
  switch (r.type) {
    case 'A':
    case 'AAAA':
      return r.content
    case 'CNAME':
    case 'NS':
      return `${r.content}.`
    case 'MX':
      return `${r.priority} ${dotted(r.content)}`
    case 'SRV':
      return `${r.priority} ${r.weight} ${r.port} ${dotted(r.content)}`
    case 'CAA':
      return `${r.flag} ${r.tag} ${quote(r.content)}`
    case 'TXT':
      return splitTxt(r.content).map(quote).join(' ')
  }
}

/**
 * A BIND zone file for one subdomain, with the subdomain as the origin: SOA and NS synthesized
 * from the settings, or, when the subdomain delegates itself (NS at `@`), its own NS records as
 * the zone's. `named-checkzone <subdomain> <file>` loads it.
 */
export function bindZoneFile(
  fullDomain: string,
  records: readonly RecordValues[],
  options: { nameservers: readonly string[]; serial: number },
): string {
  const ownNs = records.filter((r) => r.name === '@' && r.type === 'NS').map((r) => r.content)
  const ns = ownNs[0] ?? options.nameservers[0] ?? `ns1.${fullDomain}`
  const lines = [
    `$ORIGIN ${fullDomain}.`,
    `$TTL ${TTL_DEFAULT}`,
    `@ ${TTL_DEFAULT} IN SOA ${ns}. hostmaster.${fullDomain}. ${options.serial} 3600 600 1209600 ${TTL_MIN}`,
    ...(ownNs.length ? [] : options.nameservers.map((n) => `@ ${TTL_DEFAULT} IN NS ${n}.`)),
  ]
  for (const r of sortedRecords(records)) lines.push(`${r.name} ${r.ttl} IN ${r.type} ${rdataOf(r)}`)
  return `${lines.join('\n')}\n`
}

/**
 * A subdomain whose own name is a CNAME cannot be a zone: a CNAME never sits beside the SOA and
 * NS every zone has at its apex (RFC 1034 §3.6.2; BIND refuses "CNAME and other data"). Such a
 * subdomain is exported within its root zone instead: `$ORIGIN` is the root domain, SOA and NS are
 * the root zone's, and names are relative to the root (`host`, `www.host`), which
 * `named-checkzone <root domain> <file>` loads.
 */
export function bindZoneFileInRoot(
  fullDomain: string,
  rootdomain: string,
  records: readonly RecordValues[],
  options: { nameservers: readonly string[]; serial: number },
): string {
  const label = fullDomain.slice(0, -(rootdomain.length + 1))
  const ns = options.nameservers[0] ?? `ns1.${rootdomain}`
  const lines = [
    `; ${fullDomain} is an alias (CNAME), so it is exported within its root zone ${rootdomain}`,
    `$ORIGIN ${rootdomain}.`,
    `$TTL ${TTL_DEFAULT}`,
    `@ ${TTL_DEFAULT} IN SOA ${ns}. hostmaster.${rootdomain}. ${options.serial} 3600 600 1209600 ${TTL_MIN}`,
    ...options.nameservers.map((n) => `@ ${TTL_DEFAULT} IN NS ${n}.`),
  ]
  for (const r of sortedRecords(records))
    lines.push(`${r.name === '@' ? label : `${r.name}.${label}`} ${r.ttl} IN ${r.type} ${rdataOf(r)}`)
  return `${lines.join('\n')}\n`
}

function sortedRecords(records: readonly RecordValues[]): RecordValues[] {
  return [...records].sort((a, b) => a.name.localeCompare(b.name) || a.type.localeCompare(b.type))
}
