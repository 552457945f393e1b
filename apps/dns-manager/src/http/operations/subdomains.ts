import { z } from 'zod'
import { createdId, defineOperation } from '../operation.ts'
import { ZPage, zId } from './inputs.ts'

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
    input: ZListSubdomains,
    write: false,
    rest: { method: 'get', path: '/subdomains' },
    graphql: {
      kind: 'query',
      field: 'subdomains',
      args: '(cursor: String, per_page: Int, rootdomain: String, search: String)',
      type: 'SubdomainPage!',
    },
    handler: ({ useCases, principal }, input) => useCases.listSubdomains(principal, input),
  }),
  defineOperation({
    name: 'subdomains.get',
    summary: 'One subdomain',
    input: ZSubdomainId,
    write: false,
    rest: { method: 'get', path: '/subdomains/:id' },
    graphql: { kind: 'query', field: 'subdomain', args: '(id: Int!)', type: 'SubdomainResult!' },
    handler: ({ useCases, principal }, input) => useCases.getSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.create',
    summary:
      'Register a subdomain under an offered root zone (counts against the quota, charges the zone price)',
    input: ZCreateSubdomain,
    write: true,
    rest: { method: 'post', path: '/subdomains', status: 201 },
    graphql: {
      kind: 'mutation',
      field: 'createSubdomain',
      args: '(subdomain: String!, rootdomain: String!)',
      type: 'SubdomainResult!',
    },
    target: (i, o) => (o ? `subdomain:${createdId(o, 'subdomain')}` : `${i.subdomain}.${i.rootdomain}`),
    handler: ({ useCases, principal }, input) => useCases.createSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.renew',
    summary: 'Renew for one term: max(expires_at, now) + term, charged from the balance',
    input: ZSubdomainId,
    write: true,
    rest: { method: 'post', path: '/subdomains/:id/renew' },
    graphql: { kind: 'mutation', field: 'renewSubdomain', args: '(id: Int!)', type: 'RenewResult!' },
    target: idTarget,
    handler: ({ useCases, principal }, input) => useCases.renewSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.delete',
    summary: 'Release a subdomain and remove its records upstream',
    input: ZSubdomainId,
    write: true,
    rest: {
      method: 'post',
      path: '/subdomains/:id/delete',
      also: [{ method: 'delete', path: '/subdomains/:id' }],
    },
    graphql: { kind: 'mutation', field: 'deleteSubdomain', args: '(id: Int!)', type: 'Deleted!' },
    target: idTarget,
    handler: ({ useCases, principal }, input) => useCases.deleteSubdomain(principal, input),
  }),
  defineOperation({
    name: 'subdomains.zone',
    summary: 'The subdomain as a BIND zone file (REST answers text/plain)',
    input: ZSubdomainId,
    write: false,
    rest: {
      method: 'get',
      path: '/subdomains/:id/zone',
      raw: (o: { zone: string }) => ({ contentType: 'text/dns; charset=utf-8', body: o.zone }),
    },
    graphql: { kind: 'query', field: 'zoneFile', args: '(id: Int!)', type: 'ZoneFile!' },
    handler: ({ useCases, principal }, input) => useCases.exportZone(principal, input),
  }),
]
