import type { RecordType } from './records.ts'

/** One RRset at the upstream: every record of one name and type. Empty `records` deletes it. */
export interface RRset {
  /** Fully qualified, lowercase, without the trailing dot. */
  name: string
  type: RecordType
  ttl: number
  /** RDATA in presentation format (`10 mx.example.org.`). */
  records: string[]
}

/**
 * The upstream DNS provider port: applies RRset replacements and deletions for one zone, all or
 * nothing as far as the upstream allows. Throws ProviderError when the upstream refuses or is
 * unreachable.
 */
export interface DnsProvider {
  readonly kind: 'database' | 'powerdns' | 'cloudflare'
  applyRRsets(zone: string, rrsets: readonly RRset[]): Promise<void>
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
