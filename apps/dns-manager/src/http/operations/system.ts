import { z } from 'zod'
import { apiCredential, defineOperation } from '../define.ts'
import { ZSystemOutput, ZWhoisOutput } from './outputs.ts'
import { ZNoInput } from './account.ts'
import { siteRead } from './hot-reads.ts'

export const ZWhois = z.strictObject({ domain: z.string().min(1, 'must not be empty').max(253) })
export type TWhois = z.infer<typeof ZWhois>

export const systemOperations = [
  defineOperation({
    name: 'whois.lookup',
    summary: 'WHOIS for a name under an offered zone: registered, grace, available or reserved',
    args: ZWhois,
    output: ZWhoisOutput,
    auth: apiCredential,
    errors: { not_found: 'the name is under no offered zone' },
    hot: siteRead('the zones and their registrations, read from Postgres on each request'),
    write: false,
    rest: { method: 'get', path: '/whois' },
    graphql: { kind: 'query', field: 'whois', args: '(domain: String!)', type: 'WhoisResult!' },
    call: ({ useCases, principal }, input) => useCases.whois(principal, input),
  }),
  defineOperation({
    name: 'system.info',
    summary: 'Version, offered zones with prices and terms, limits, health',
    args: ZNoInput,
    output: ZSystemOutput,
    auth: apiCredential,
    errors: {},
    hot: siteRead('the zones, the provider and a database ping, on each request'),
    write: false,
    rest: { method: 'get', path: '/system' },
    graphql: { kind: 'query', field: 'systemInfo', args: '', type: 'SystemResult!' },
    call: ({ useCases }) => useCases.systemInfo(),
  }),
]
