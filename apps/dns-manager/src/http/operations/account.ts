import { z } from 'zod'
import { apiCredential, defineOperation } from '../define.ts'
import { ZQuotaOutput, ZVerifyOutput } from './outputs.ts'
import { accountView } from './hot-reads.ts'

export const ZNoInput = z.strictObject({})
export type TNoInput = z.infer<typeof ZNoInput>

export const accountOperations = [
  defineOperation({
    name: 'auth.verify',
    summary: 'Check the API key and secret; returns the key and a quota summary',
    args: ZNoInput,
    output: ZVerifyOutput,
    auth: apiCredential,
    errors: {},
    hot: accountView("the key and the account's quota"),
    write: false,
    rest: { method: 'post', path: '/auth/verify' },
    graphql: { kind: 'query', field: 'verifyCredentials', args: '', type: 'VerifyResult!' },
    call: ({ useCases, principal }) => useCases.verify(principal),
  }),
  defineOperation({
    name: 'quota.get',
    summary: 'Subdomain quota (used, total, available) and balance',
    args: ZNoInput,
    output: ZQuotaOutput,
    auth: apiCredential,
    errors: {},
    hot: accountView('the quota and the balance'),
    write: false,
    rest: { method: 'get', path: '/quota' },
    graphql: { kind: 'query', field: 'quota', args: '', type: 'QuotaResult!' },
    call: ({ useCases, principal }) => useCases.quota(principal),
  }),
]
