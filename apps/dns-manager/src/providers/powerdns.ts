import type { DnsProvider, ServedRRset } from '../domain/provider.ts'
import { ProviderError } from '../domain/provider.ts'
import { upstreamFetch } from './http.ts'

const dot = (name: string) => (name.endsWith('.') ? name : `${name}.`)
const undot = (name: string) => (name.endsWith('.') ? name.slice(0, -1) : name)

interface PdnsZone {
  rrsets?: Array<{
    name: string
    type: string
    ttl: number
    records: Array<{ content: string; disabled: boolean }>
  }>
}

/**
 * PowerDNS Authoritative HTTP API: one `PATCH /api/v1/servers/{server}/zones/{zone}` per change,
 * RRsets with `changetype` REPLACE or DELETE, names with trailing dots, `X-API-Key`. PowerDNS
 * applies a PATCH atomically: either every RRset changes or none.
 */
export function powerDnsProvider(options: {
  apiUrl: string
  apiKey: string
  serverId: string
  timeoutMs: number
}): DnsProvider {
  const base = options.apiUrl.replace(/\/+$/, '')
  const zonesUrl = `${base}/api/v1/servers/${encodeURIComponent(options.serverId)}/zones`
  const headers = { 'X-API-Key': options.apiKey, 'Content-Type': 'application/json' }
  return {
    kind: 'powerdns',
    /**
     * Creates the zone with its own SOA (MNAME the first nameserver, RNAME hostmaster.<zone>) and
     * NS from NAMESERVERS; PowerDNS would otherwise serve a.misconfigured.dns.server.invalid. as
     * MNAME. A zone that exists with that placeholder SOA gets the proper one.
     */
    async ensureZone(zone: string, nameservers: readonly string[]) {
      const soa = {
        name: dot(zone),
        type: 'SOA',
        ttl: 3600,
        records: [
          {
            content: `${dot(nameservers[0] ?? `ns1.${zone}`)} hostmaster.${dot(zone)} 1 10800 3600 604800 3600`,
            disabled: false,
          },
        ],
      }
      const zoneUrl = `${zonesUrl}/${encodeURIComponent(dot(zone))}`
      const found = await upstreamFetch(zoneUrl, { headers, timeoutMs: options.timeoutMs })
      if (found.status === 200) {
        const current = (found.body as PdnsZone).rrsets?.find((r) => r.type === 'SOA')
        if (current?.records[0]?.content.startsWith('a.misconfigured.dns.server.invalid.')) {
          const fixed = await upstreamFetch(zoneUrl, {
            method: 'PATCH',
            headers,
            body: JSON.stringify({ rrsets: [{ ...soa, changetype: 'REPLACE' }] }),
            timeoutMs: options.timeoutMs,
          })
          if (fixed.status !== 204)
            throw new ProviderError(`PowerDNS refused the SOA of ${zone}: HTTP ${fixed.status}`)
        }
        return 'exists'
      }
      const created = await upstreamFetch(zonesUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          name: dot(zone),
          kind: 'Native',
          soa_edit_api: 'DEFAULT',
          nameservers: nameservers.map(dot),
          rrsets: [soa],
        }),
        timeoutMs: options.timeoutMs,
      })
      if (created.status !== 201)
        throw new ProviderError(`PowerDNS refused to create ${zone}: HTTP ${created.status}`)
      return 'created'
    },
    async listRRsets(zone: string): Promise<ServedRRset[]> {
      const res = await upstreamFetch(`${zonesUrl}/${encodeURIComponent(dot(zone))}`, {
        headers,
        timeoutMs: options.timeoutMs,
      })
      if (res.status !== 200)
        throw new ProviderError(`PowerDNS could not list ${zone}: HTTP ${res.status}`, res.status)
      return ((res.body as PdnsZone).rrsets ?? []).map((r) => ({
        name: undot(r.name).toLowerCase(),
        type: r.type,
        ttl: r.ttl,
        records: r.records.filter((x) => !x.disabled).map((x) => x.content),
      }))
    },
    async applyRRsets(zone, rrsets) {
      if (rrsets.length === 0) return
      const body = {
        rrsets: rrsets.map((r) =>
          r.records.length === 0
            ? { name: dot(r.name), type: r.type, changetype: 'DELETE' }
            : {
                name: dot(r.name),
                type: r.type,
                ttl: r.ttl,
                changetype: 'REPLACE',
                records: r.records.map((content) => ({ content, disabled: false })),
              },
        ),
      }
      const url = `${base}/api/v1/servers/${encodeURIComponent(options.serverId)}/zones/${encodeURIComponent(dot(zone))}`
      const res = await upstreamFetch(url, {
        method: 'PATCH',
        headers: { 'X-API-Key': options.apiKey, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        timeoutMs: options.timeoutMs,
      })
      if (res.status !== 204 && res.status !== 200) {
        const reason =
          typeof res.body === 'object' && res.body && 'error' in res.body
            ? String((res.body as { error: unknown }).error)
            : `HTTP ${res.status}`
        throw new ProviderError(`PowerDNS refused the change: ${reason}`, res.status)
      }
    },
  }
}
