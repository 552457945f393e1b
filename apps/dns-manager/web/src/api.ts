/**
 * The back office's JSON API as the pages use it. Failures come back as ApiFailure with the
 * envelope's code (dns-manager's REST envelope, read by @quartet/web-pages/api-failure).
 */

import { restEnvelope, sendJson } from '@quartet/web-pages/api-failure'
import type { ArgsOf, OperationName, ResultOf } from '../../src/http/operations.ts'

export type { ArgsOf, ResultOf }

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
/**
 * One of the API's operations (its JSON-RPC name), with this session as the principal: its
 * arguments and its answer typed by its definition (src/http/operations).
 */
export async function op<N extends OperationName>(name: N, input?: ArgsOf<N>): Promise<ResultOf<N>> {
  return post<ResultOf<N>>(`/op/${name}`, input ?? {})
}
export async function opText<N extends OperationName>(name: N, input?: ArgsOf<N>): Promise<string> {
  return (await send('POST', `/account/api/op/${name}`, input ?? {})).text()
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
export type Subdomain = ResultOf<'subdomains.get'>['subdomain']
export type Status = Subdomain['status']
export type DnsRecord = ResultOf<'dns_records.get'>['dns_record']
export type SystemInfo = ResultOf<'system.info'>['system']
export type Zone = SystemInfo['zones'][number]
export type ApiKey = ResultOf<'keys.list'>['keys'][number]
export type NewKey = ResultOf<'keys.create'>['key']
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
  system: () => op('system.info'),
  subdomains: () => op('subdomains.list', { per_page: 500 }),
  quota: () => op('quota.get'),
}
