import { z } from 'zod'
import { defineOperation } from '../operation.ts'
import { ZNoInput } from './account.ts'

export const ZWhois = z.strictObject({ domain: z.string().min(1, 'must not be empty').max(253) })
export type TWhois = z.infer<typeof ZWhois>

export const systemOperations = [
  defineOperation({
    name: 'whois.lookup',
    summary: 'WHOIS for a name under an offered zone: registered, grace, available or reserved',
    input: ZWhois,
    write: false,
    rest: { method: 'get', path: '/whois' },
    graphql: { kind: 'query', field: 'whois', args: '(domain: String!)', type: 'WhoisResult!' },
    handler: ({ useCases, principal }, input) => useCases.whois(principal, input),
  }),
  defineOperation({
    name: 'system.info',
    summary: 'Version, offered zones with prices and terms, limits, health',
    input: ZNoInput,
    write: false,
    rest: { method: 'get', path: '/system' },
    graphql: { kind: 'query', field: 'systemInfo', args: '', type: 'SystemResult!' },
    handler: ({ useCases }) => useCases.systemInfo(),
  }),
]
