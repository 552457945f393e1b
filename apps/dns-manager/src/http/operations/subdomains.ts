import { z } from 'zod'
import { createdId, apiCredential, defineOperation } from '../define.ts'
import { ZDeleted, ZRenewOutput, ZSubdomainOutput, ZSubdomainPage, ZZoneFile } from './outputs.ts'
import { ZPage, zId } from './inputs.ts'
import { accountView } from './hot-reads.ts'

export const ZListSubdomains = z.strictObject({
  ...ZPage,
  rootdomain: z.string().max(253).optional(),
  search: z.string().max(63).optional(),
})
export type TListSubdomains = z.infer<typeof ZListSubdomains>
export const ZSubdomainId = z.strictObject({ id: zId })
export type TSubdomainId = z.infer<typeof ZSubdomainId>
export const ZCreateSubdomain = z.strictObject({
  subdomain: z.string().min(1, 'must not be empty').max(255),
  rootdomain: z.string().min(1, 'must not be empty').max(253),
})
export type TCreateSubdomain = z.infer<typeof ZCreateSubdomain>

const idTarget = (i: { id: number }) => `subdomain:${i.id}`

export const subdomainOperations = [
  defineOperation({
    name: 'subdomains.list',
    summary: 'List the subdomains of the account (cursor pagination)',
    args: ZListSubdomains,
    output: ZSubdomainPage,
    auth: apiCredential,
    errors: {},
    hot: accountView('the page of subdomains'),
    write: false,
    rest: { method: 'get', path: '/subdomains' },
    graphql: {
      kind: 'query',
      field: 'subdomains',
      args: '(cursor: String, per_page: Int, rootdomain: String, search: String)',
      type: 'SubdomainPage!',
    },
    call: ({ useCases, principal }, input) => useCases.listSubdomains(principal, input),
  }),
  defineOperation({
    name: 'subdomains.get',
    summary: 'One subdomain',
    args: ZSubdomainId,
    output: ZSubdomainOutput,
    auth: apiCredential,
    errors: { subdomain_not_found: 'no such subdomain in the account' },
    hot: accountView('the subdomain'),
    write: false,
    rest: { method: 'get', path: '/subdomains/:id' },
    graphql: { kind: 'query', field: 'subdomain', args: '(id: Int!)', type: 'SubdomainResult!' },
    call: ({ useCases, principal }, input) => useCases.getSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.create',
    summary:
      'Register a subdomain under an offered root zone (counts against the quota, charges the zone price)',
    args: ZCreateSubdomain,
    output: ZSubdomainOutput,
    auth: apiCredential,
    errors: {
      subdomain_taken: 'the name is registered or reserved',
      quota_exceeded: 'the account holds its quota of subdomains',
      insufficient_balance: 'the balance does not cover the zone price',
    },
    write: true,
    rest: { method: 'post', path: '/subdomains', status: 201 },
    graphql: {
      kind: 'mutation',
      field: 'createSubdomain',
      args: '(subdomain: String!, rootdomain: String!)',
      type: 'SubdomainResult!',
    },
    target: (i, o) => (o ? `subdomain:${createdId(o, 'subdomain')}` : `${i.subdomain}.${i.rootdomain}`),
    call: ({ useCases, principal }, input) => useCases.createSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.renew',
    summary: 'Renew for one term: max(expires_at, now) + term, charged from the balance',
    args: ZSubdomainId,
    output: ZRenewOutput,
    auth: apiCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      renewal_not_yet_available: 'before the renewal window',
      renewal_window_expired: 'after the grace period',
      insufficient_balance: 'the balance does not cover the zone price',
    },
    write: true,
    rest: { method: 'post', path: '/subdomains/:id/renew' },
    graphql: { kind: 'mutation', field: 'renewSubdomain', args: '(id: Int!)', type: 'RenewResult!' },
    target: idTarget,
    call: ({ useCases, principal }, input) => useCases.renewSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.delete',
    summary: 'Release a subdomain and remove its records upstream',
    args: ZSubdomainId,
    output: ZDeleted,
    auth: apiCredential,
    errors: {
      subdomain_not_found: 'no such subdomain in the account',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: {
      method: 'post',
      path: '/subdomains/:id/delete',
      also: [{ method: 'delete', path: '/subdomains/:id' }],
    },
    graphql: { kind: 'mutation', field: 'deleteSubdomain', args: '(id: Int!)', type: 'Deleted!' },
    target: idTarget,
    call: ({ useCases, principal }, input) => useCases.deleteSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.zone',
    summary: 'The subdomain as a BIND zone file (REST answers text/plain)',
    args: ZSubdomainId,
    output: ZZoneFile,
    auth: apiCredential,
    errors: { subdomain_not_found: 'no such subdomain in the account' },
    write: false,
    rest: {
      method: 'get',
      path: '/subdomains/:id/zone',
      raw: {
        contentType: 'text/dns; charset=utf-8',
        documented: 'the BIND zone file (JSON-RPC and GraphQL answer `{zone, origin, generated_at}`)',
        body: (o: { zone: string }) => o.zone,
      },
    },
    graphql: { kind: 'query', field: 'zoneFile', args: '(id: Int!)', type: 'ZoneFile!' },
    call: ({ useCases, principal }, input) => useCases.exportZone(principal, input),
  }),
]
