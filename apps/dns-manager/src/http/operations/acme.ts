import { z } from 'zod'
import { acmeCredential, defineOperation } from '../define.ts'
import { ZAcmeChallengeOutput } from './outputs.ts'

/**
 * ACME DNS-01 through lego's `httpreq` protocol: `POST <base>/present` and `POST <base>/cleanup`
 * with `{fqdn, value}` (default mode) or `{domain, token, keyAuth}` (RAW mode), base
 * `/rest/acme/httpreq` (or `/api/v1/rest/acme/httpreq`), HTTP Basic KEY:SECRET. The same two
 * operations are JSON-RPC methods and GraphQL mutations.
 */
export const ZAcmeChallenge = z.strictObject({
  fqdn: z.string().max(253).optional(),
  value: z.string().max(255).optional(),
  domain: z.string().max(253).optional(),
  token: z.string().max(255).optional(),
  keyAuth: z.string().max(512).optional(),
})
export type TAcmeChallenge = z.infer<typeof ZAcmeChallenge>

const args = '(fqdn: String, value: String, domain: String, token: String, keyAuth: String)'
const target = (_i: unknown, o?: unknown) => {
  const c = (o as { challenge?: { fqdn: string; value: string } } | undefined)?.challenge
  return c ? `${c.fqdn} TXT ${c.value}` : 'acme-challenge'
}

export const acmeOperations = [
  defineOperation({
    name: 'acme.present',
    summary:
      'ACME DNS-01: add a TXT value at _acme-challenge.<name> (lego httpreq present; others at the name stay; idempotent)',
    args: ZAcmeChallenge,
    output: ZAcmeChallengeOutput,
    auth: acmeCredential,
    errors: {
      bad_request: 'neither fqdn and value nor domain and keyAuth, or a name under no subdomain of the key',
      subdomain_not_found: 'no subdomain of the account holds the name',
      conflict: 'another record at the name forbids a TXT',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: { method: 'post', path: '/acme/httpreq/present' },
    graphql: { kind: 'mutation', field: 'presentAcmeChallenge', args, type: 'AcmeChallengeResult!' },
    target,
    call: ({ useCases, principal }, input) => useCases.presentChallenge(principal, input),
  }),
  defineOperation({
    name: 'acme.cleanup',
    summary:
      'ACME DNS-01: remove exactly this TXT value from _acme-challenge.<name> (lego httpreq cleanup; idempotent)',
    args: ZAcmeChallenge,
    output: ZAcmeChallengeOutput,
    auth: acmeCredential,
    errors: {
      bad_request: 'neither fqdn and value nor domain and keyAuth, or a name under no subdomain of the key',
      subdomain_not_found: 'no subdomain of the account holds the name',
      provider_operation_failed: 'the DNS provider refused or failed the change',
    },
    write: true,
    rest: { method: 'post', path: '/acme/httpreq/cleanup' },
    graphql: { kind: 'mutation', field: 'cleanupAcmeChallenge', args, type: 'AcmeChallengeResult!' },
    target,
    call: ({ useCases, principal }, input) => useCases.cleanupChallenge(principal, input),
  }),
]
