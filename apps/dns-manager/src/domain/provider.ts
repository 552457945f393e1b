import type { RecordType } from './record-rules.ts'

/** One RRset at the upstream: every record of one name and type. Empty `records` deletes it. */
export interface RRset {
  /** Fully qualified, lowercase, without the trailing dot. */
  name: string
  type: RecordType
  ttl: number
  /** RDATA in presentation format (`10 mx.example.org.`). */
  records: string[]
}

/** An RRset as the upstream serves it; its type may be one dns-manager does not manage (SOA, DS…). */
export interface ServedRRset extends Omit<RRset, 'type'> {
  type: string
}

/**
 * The upstream DNS provider port: applies RRset replacements and deletions for one zone, all or
 * nothing as far as the upstream allows, and reads back what it serves. Throws ProviderError
 * when the upstream refuses or is unreachable; a timeout is an unknown outcome (the change may
 * still land), which the caller must treat as such.
 */
export interface DnsProvider {
  readonly kind: 'database' | 'powerdns' | 'cloudflare'
  applyRRsets(
    zone: string,
    rrsets: readonly { name: string; type: string; ttl: number; records: string[] }[],
  ): Promise<void>
  /**
   * Every RRset the upstream serves in the zone (names without the trailing dot), or null when
   * there is no upstream to read (the database provider).
   */
  listRRsets(zone: string): Promise<ServedRRset[] | null>
  /** Creates the zone upstream when missing (operators call it from `cli zones:add`); absent where zones are made elsewhere. */
  ensureZone?(zone: string, nameservers: readonly string[]): Promise<'created' | 'exists'>
}

export class ProviderError extends Error {
  constructor(
    message: string,
    readonly upstreamStatus?: number,
  ) {
    super(message)
    this.name = 'ProviderError'
  }
}
