import { rpcMethodNames } from '../src/dns-styles/rpc.ts'
import { operationsOf } from '../src/openapi.ts'

/** An OpenAPI document shaped like dns-manager's: registry routes under /rest, a back-office route outside. */
const document = {
  paths: {
    '/rest/dns_records/{id}': {
      get: { operationId: 'dns_records.get' },
      patch: { operationId: 'dns_records.update.patch' },
      delete: { operationId: 'dns_records.delete.delete' },
    },
    '/rest/dns_records/{id}/update': { post: { operationId: 'dns_records.update' } },
    '/rest/dns_records/{id}/delete': { post: { operationId: 'dns_records.delete' } },
    '/rest/quota': { get: { operationId: 'quota.get' } },
    '/account/signin': { post: { operationId: 'signin' } },
  },
}

describe('rpcMethodNames', () => {
  it('when the document holds registry routes, second routes and back-office routes, then only the registry names are methods', () => {
    const names = rpcMethodNames(operationsOf(document))
    expect([...names].sort()).toEqual([
      'dns_records.delete',
      'dns_records.get',
      'dns_records.update',
      'quota.get',
    ])
  })
})
