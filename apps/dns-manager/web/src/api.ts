/**
 * The back office's JSON API as the pages use it. Failures come back as ApiFailure with the
 * envelope's code (dns-manager's REST envelope, read by @quartet/web-pages/api-failure). Requests
 * and answers are typed by the operation definitions (src/http/back-office/, src/http/operations):
 * type-only imports, so nothing of the server lands in the bundle.
 */

import type { InputOf, OutputOf } from '@quartet/core/operation'
import { restEnvelope, sendJson } from '@quartet/web-pages/api-failure'
import type * as accountOps from '../../src/http/back-office/account.ts'
import type * as signUpAndIn from '../../src/http/back-office/sign-up-and-in.ts'
import type { ArgsOf, OperationName, ResultOf } from '../../src/http/operations.ts'

export type { ArgsOf, ResultOf }

export { ApiFailure } from '@quartet/web-pages/api-failure'

/** The back office's requests carry `x-requested-with`: a cross-site form cannot send it. */
const send = (method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response> =>
  sendJson(method, path, { body, headers: { 'x-requested-with': 'dns-manager' }, read: restEnvelope })

async function get<T>(path: string): Promise<T> {
  return (await (await send('GET', `/account/api${path}`)).json()) as T
}
async function post<T>(path: string, body: unknown = {}): Promise<T> {
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

/** The back office's own operations (src/http/back-office/), by what the pages call them. */
interface BackOffice {
  site: typeof signUpAndIn.siteOperation
  signup: typeof signUpAndIn.signupStartOperation
  signupLink: typeof signUpAndIn.signupLinkOperation
  signupComplete: typeof signUpAndIn.signupCompleteOperation
  signin: typeof signUpAndIn.signinOperation
  reset: typeof signUpAndIn.resetRequestOperation
  resetComplete: typeof signUpAndIn.resetCompleteOperation
  signout: typeof accountOps.signoutOperation
  account: typeof accountOps.accountOperation
  accountSettings: typeof accountOps.accountSettingsOperation
  changePassword: typeof accountOps.changePasswordOperation
  audit: typeof accountOps.auditLogOperation
}
/** What a back-office operation answers. */
type Answer<K extends keyof BackOffice> = OutputOf<BackOffice[K]>
/** The JSON body a back-office operation takes. */
type Body<K extends keyof BackOffice> = InputOf<BackOffice[K]> extends { body: infer B } ? B : never
type Query<K extends keyof BackOffice> = InputOf<BackOffice[K]> extends { query: infer Q } ? Q : never

/** What the pages need before sign-in: the registration mode and the password rule. */
export type Site = Answer<'site'>
export type Account = Answer<'account'>['account']
export type AuditEntry = Answer<'audit'>['entries'][number]
export type Subdomain = ResultOf<'subdomains.get'>['subdomain']
export type Status = Subdomain['status']
export type DnsRecord = ResultOf<'dns_records.get'>['dns_record']
export type SystemInfo = ResultOf<'system.info'>['system']
export type Zone = SystemInfo['zones'][number]
export type ApiKey = ResultOf<'keys.list'>['keys'][number]
export type NewKey = ResultOf<'keys.create'>['key']

export const api = {
  site: () => get<Site>('/site'),
  signup: (body: Body<'signup'>) => post<Answer<'signup'>>('/signup', body),
  signupLink: (token: Query<'signupLink'>['token']) =>
    get<Answer<'signupLink'>>(`/signup/link?token=${encodeURIComponent(token)}`),
  signupComplete: (body: Body<'signupComplete'>) => post<Answer<'signupComplete'>>('/signup/complete', body),
  signin: (body: Body<'signin'>) => post<Answer<'signin'>>('/signin', body),
  reset: (body: Body<'reset'>) => post<Answer<'reset'>>('/reset', body),
  resetComplete: (body: Body<'resetComplete'>) => post<Answer<'resetComplete'>>('/reset/complete', body),
  signout: () => post<Answer<'signout'>>('/signout'),
  account: () => get<Answer<'account'>>('/account'),
  accountSettings: (body: Body<'accountSettings'>) =>
    post<Answer<'accountSettings'>>('/account/settings', body),
  changePassword: (body: Body<'changePassword'>) => post<Answer<'changePassword'>>('/account/password', body),
  /** A page of 50 entries, newest first; `before` is the previous page's `next_before`. */
  audit: (before?: Query<'audit'>['before']) =>
    get<Answer<'audit'>>(`/audit?limit=50${before ? `&before=${before}` : ''}`),
  system: () => op('system.info'),
  subdomains: () => op('subdomains.list', { per_page: 500 }),
  quota: () => op('quota.get'),
}
