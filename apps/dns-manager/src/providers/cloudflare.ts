import type { DnsProvider, ServedRRset } from '../domain/provider.ts'
import { ProviderError } from '../domain/provider.ts'
import { upstreamFetch } from './http.ts'

interface CfEnvelope<T> {
  success: boolean
  errors?: Array<{ code: number; message: string }>
  result: T
}
interface CfRecord {
  id: string
  name: string
  type: string
  ttl?: number
  content?: string
  priority?: number
  data?: Record<string, unknown>
}
type RRsetBody = { name: string; type: string; ttl: number; records: string[] }
const PAGE = 5000

/**
 * Cloudflare DNS records API v4 with a bearer token. Cloudflare has no RRset call, so replacing
 * an RRset lists its records, creates the new ones, then deletes the old ones (creation first, so
 * a failure half-way leaves the old answer in place and the retry converges).
 */
export function cloudflareProvider(options: {
  apiUrl: string
  token: string
  timeoutMs: number
}): DnsProvider {
  const base = options.apiUrl.replace(/\/+$/, '')
  const zoneIds = new Map<string, string>()

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await upstreamFetch(`${base}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${options.token}`,
        ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      timeoutMs: options.timeoutMs,
    })
    const env = res.body as CfEnvelope<T> | null
    if (res.status >= 300 || !env || env.success !== true) {
      const reason = env?.errors?.map((e) => `${e.code} ${e.message}`).join('; ') || `HTTP ${res.status}`
      throw new ProviderError(`Cloudflare refused ${method} ${path}: ${reason}`, res.status)
    }
    return env.result
  }

  async function zoneId(zone: string): Promise<string> {
    const cached = zoneIds.get(zone)
    if (cached) return cached
    const zones = await call<Array<{ id: string; name: string }>>(
      'GET',
      `/zones?name=${encodeURIComponent(zone)}`,
    )
    const id = zones.find((z) => z.name === zone)?.id
    if (!id) throw new ProviderError(`Cloudflare has no zone ${zone}`)
    zoneIds.set(zone, id)
    return id
  }

  return {
    kind: 'cloudflare',
    async listRRsets(zone: string): Promise<ServedRRset[]> {
      const id = await zoneId(zone)
      const sets = new Map<string, ServedRRset>()
      for (let page = 1; ; page++) {
        const rows = await call<CfRecord[]>('GET', `/zones/${id}/dns_records?per_page=${PAGE}&page=${page}`)
        for (const r of rows) {
          const name = r.name.replace(/\.$/, '').toLowerCase()
          const key = `${name} ${r.type}`
          const set = sets.get(key) ?? { name, type: r.type, ttl: r.ttl ?? 1, records: [] }
          set.records.push(fromCloudflare(r))
          sets.set(key, set)
        }
        if (rows.length < PAGE) break
      }
      return [...sets.values()]
    },
    async applyRRsets(zone, rrsets) {
      const id = await zoneId(zone)
      for (const rrset of rrsets) {
        const existing = await call<CfRecord[]>(
          'GET',
          `/zones/${id}/dns_records?name=${encodeURIComponent(rrset.name)}&type=${rrset.type}&per_page=5000`,
        )
        for (const content of rrset.records) {
          await call('POST', `/zones/${id}/dns_records`, toCloudflare(rrset, content))
        }
        for (const old of existing) await call('DELETE', `/zones/${id}/dns_records/${old.id}`)
      }
    },
  }
}

/** Presentation-format RDATA → Cloudflare's record body. */
function toCloudflare(rrset: RRsetBody, rdata: string): Record<string, unknown> {
  const base = { type: rrset.type, name: rrset.name, ttl: rrset.ttl, proxied: false }
  const undot = (s: string) => (s === '.' ? '.' : s.replace(/\.$/, ''))
  const parts = rdata.split(' ')
  switch (rrset.type) {
    case 'MX':
      return { ...base, priority: Number(parts[0]), content: undot(parts[1]!) }
    case 'SRV':
      return {
        ...base,
        data: {
          priority: Number(parts[0]),
          weight: Number(parts[1]),
          port: Number(parts[2]),
          target: undot(parts[3]!),
        },
      }
    case 'CAA': {
      const [flags, tag, ...rest] = parts
      return { ...base, data: { flags: Number(flags), tag, value: JSON.parse(rest.join(' ')) as string } }
    }
    case 'CNAME':
    case 'NS':
      return { ...base, content: undot(rdata) }
    default:
      return { ...base, content: rdata }
  }
}

/** Cloudflare's record → presentation-format RDATA, the inverse of toCloudflare. */
function fromCloudflare(r: CfRecord): string {
  // The root (a null MX) is "." already.
  const dot = (s: string) => (s.endsWith('.') ? s : `${s}.`)
  const d = r.data ?? {}
  switch (r.type) {
    case 'MX':
      return `${r.priority ?? 0} ${dot(r.content ?? '')}`
    case 'SRV':
      return `${String(d.priority)} ${String(d.weight)} ${String(d.port)} ${dot(String(d.target))}`
    case 'CAA':
      return `${String(d.flags)} ${String(d.tag)} ${JSON.stringify(String(d.value))}`
    case 'CNAME':
    case 'NS':
      return dot(r.content ?? '')
    default:
      return r.content ?? ''
  }
}
