import { z } from 'zod'
import { defineOperation } from '../operation.ts'

export const ZNoInput = z.strictObject({})
export type TNoInput = z.infer<typeof ZNoInput>

export const ZQuota = z.object({
  used: z.number().int(),
  total: z.number().int(),
  available: z.number().int(),
})
export const ZVerifyResult = z.object({
  success: z.literal(true),
  account: z.object({ api_key: z.string(), quota: ZQuota }),
})

export const accountOperations = [
  defineOperation({
    name: 'auth.verify',
    summary: 'Check the API key and secret; returns the key and a quota summary',
    input: ZNoInput,
    write: false,
    rest: { method: 'post', path: '/auth/verify' },
    graphql: { kind: 'query', field: 'verifyCredentials', args: '', type: 'VerifyResult!' },
    handler: ({ useCases, principal }) => useCases.verify(principal),
  }),
  defineOperation({
    name: 'quota.get',
    summary: 'Subdomain quota (used, total, available) and balance',
    input: ZNoInput,
    write: false,
    rest: { method: 'get', path: '/quota' },
    graphql: { kind: 'query', field: 'quota', args: '', type: 'QuotaResult!' },
    handler: ({ useCases, principal }) => useCases.quota(principal),
  }),
]
