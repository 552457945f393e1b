import { z } from 'zod'
import { createdId, apiCredential, defineOperation } from '../define.ts'
import { ZApiKeyList, ZDeletedKey, ZNewApiKeyOutput } from './outputs.ts'
import { ZNoInput } from './account.ts'
import { zId } from './inputs.ts'
import { accountView } from './hot-reads.ts'

export const ZKeyId = z.strictObject({ id: z.uuid('must be an API key id') })
export type TKeyId = z.infer<typeof ZKeyId>
/**
 * No input: a full API key; `scope: "dyndns"` with a subdomain: an update-only credential for
 * /nic/update; `scope: "acme"`, with a subdomain or without (all of the account's): an ACME-only
 * credential (TXT under _acme-challenge, nothing else).
 */
export const ZCreateKey = z.strictObject({
  scope: z.enum(['full', 'dyndns', 'acme']).optional(),
  subdomain_id: zId.optional(),
})
export type TCreateKey = z.infer<typeof ZCreateKey>

export const keyOperations = [
  defineOperation({
    name: 'keys.list',
    summary: 'The API keys of the account (never their secrets)',
    args: ZNoInput,
    output: ZApiKeyList,
    auth: apiCredential,
    errors: {},
    hot: accountView("the account's credentials"),
    write: false,
    rest: { method: 'get', path: '/keys' },
    graphql: { kind: 'query', field: 'apiKeys', args: '', type: 'ApiKeyList!' },
    call: ({ useCases, principal }) => useCases.listKeys(principal),
  }),
  defineOperation({
    name: 'keys.create',
    summary:
      'A new API key; with scope "dyndns" and a subdomain_id an update-only credential for /nic/update; with scope "acme" (and optionally a subdomain_id) an ACME-only credential for DNS-01; its secret is shown once',
    args: ZCreateKey,
    output: ZNewApiKeyOutput,
    auth: apiCredential,
    errors: {
      subdomain_not_found: 'the scope names a subdomain the account does not hold',
      key_limit_reached: 'the account holds its maximum of API keys',
    },
    write: true,
    rest: { method: 'post', path: '/keys', status: 201 },
    graphql: {
      kind: 'mutation',
      field: 'createApiKey',
      args: '(scope: String, subdomain_id: Int)',
      type: 'NewApiKeyResult!',
    },
    target: (_i, o) => `key:${createdId(o, 'key')}`,
    call: ({ useCases, principal }, input) => useCases.createKey(principal, input),
  }),
  defineOperation({
    name: 'keys.delete',
    summary: 'Revoke an API key',
    args: ZKeyId,
    output: ZDeletedKey,
    auth: apiCredential,
    errors: { not_found: 'no such API key in the account' },
    write: true,
    rest: { method: 'post', path: '/keys/:id/delete', also: [{ method: 'delete', path: '/keys/:id' }] },
    graphql: { kind: 'mutation', field: 'deleteApiKey', args: '(id: String!)', type: 'DeletedKey!' },
    target: (i) => `key:${i.id}`,
    call: ({ useCases, principal }, input) => useCases.deleteKey(principal, input),
  }),
  defineOperation({
    name: 'keys.regenerate',
    summary: 'A new secret for an API key (the old one stops working); shown once',
    args: ZKeyId,
    output: ZNewApiKeyOutput,
    auth: apiCredential,
    errors: { not_found: 'no such API key in the account' },
    write: true,
    rest: { method: 'post', path: '/keys/:id/regenerate' },
    graphql: { kind: 'mutation', field: 'regenerateApiKey', args: '(id: String!)', type: 'NewApiKeyResult!' },
    target: (i) => `key:${i.id}`,
    call: ({ useCases, principal }, input) => useCases.regenerateKey(principal, input),
  }),
]
