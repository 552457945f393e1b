/**
 * The back office's JSON API as the pages use it. Failures come back as ApiFailure with the
 * envelope's code (dns-manager's REST envelope, read by @quartet/web-pages/api-failure).
 */

import { restEnvelope, sendJson } from '@quartet/web-pages/api-failure'

export { ApiFailure } from '@quartet/web-pages/api-failure'

/** The back office's requests carry `x-requested-with`: a cross-site form cannot send it. */
const send = (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> =>
  sendJson(method, path, { body, headers: { 'x-requested-with': 'dns-manager' }, read: restEnvelope })

export async function get<T>(path: string): Promise<T> {
  return (await (await send('GET', `/account/api${path}`)).json()) as T
}
export async function post<T>(path: string, body: unknown = {}): Promise<T> {
  return (await (await send('POST', `/account/api${path}`, body)).json()) as T
}
/** One of the API's operations (its JSON-RPC name), with this session as the principal. */
export async function op<T>(name: string, input: Record<string, unknown> = {}): Promise<T> {
  return post<T>(`/op/${name}`, input)
}
export async function opText(name: string, input: Record<string, unknown> = {}): Promise<string> {
  return (await send('POST', `/account/api/op/${name}`, input)).text()
}

export interface Account {
  id: string
  email: string
  balance_cents: number
  quota_total: number
  api_access_enabled: boolean
  ip_allow_list: string[]
  your_ip: string | null
}
export type Status = 'active' | 'grace' | 'suspended'
export interface Subdomain {
  id: number
  subdomain: string
  rootdomain: string
  full_domain: string
  status: Status
  created_at: string
  updated_at: string
  expires_at: string | null
  never_expires: boolean
}
export interface DnsRecord {
  id: number
  name: string
  type: string
  content: string
  ttl: number
  priority: number | null
  weight: number | null
  port: number | null
  flag: number | null
  tag: string | null
}
export interface Zone {
  name: string
  price_cents: number
  term_years: number
  never_expires: boolean
}
export interface SystemInfo {
  zones: Zone[]
  limits: { renew_window_days: number; grace_days: number; ttl_default: number; max_api_keys: number }
}
export interface ApiKey {
  id: string
  api_key: string
  scope: string
  subdomain_id: number | null
  created_at: string
  last_used_at: string | null
}
export interface NewKey extends ApiKey {
  api_secret: string
}
export interface AuditEntry {
  id: string
  at: string
  operation: string
  target: string | null
  outcome: string
  via: 'api' | 'web'
  ip: string | null
}

export const api = {
  site: () => get<{ registration: 'open' | 'invite' | 'closed'; password_min: number }>('/site'),
  account: () => get<{ account: Account }>('/account'),
  system: () => op<{ system: SystemInfo }>('system.info'),
  subdomains: () =>
    op<{ subdomains: Subdomain[]; next_cursor: string | null }>('subdomains.list', { per_page: 500 }),
  quota: () =>
    op<{ quota: { used: number; total: number; available: number }; balance_cents: number }>('quota.get'),
}
