import { ApiError } from '@quartet/core/errors'
import './errors.ts'
import type { SubdomainRow } from './ports.ts'
import type { Principal } from './principal.ts'

/**
 * The rule of the ACME-only credential (acme.ts serves its DNS-01 operations): it may write and
 * delete TXT records under `_acme-challenge` of its subdomains and nothing else. Authentication
 * (accounts.ts) and every record write (dns-records.ts) apply it.
 */

export const ACME_CHALLENGE_LABEL = '_acme-challenge'
export const ACME_ONLY_MESSAGE =
  'this is an ACME-only credential: it may add and remove TXT records under _acme-challenge of its subdomains, nothing else'

/** Whether a record name (relative to its subdomain) is a DNS-01 challenge name: `_acme-challenge[.<host>]`. */
export function isAcmeChallengeName(relativeName: string): boolean {
  return relativeName === ACME_CHALLENGE_LABEL || relativeName.startsWith(`${ACME_CHALLENGE_LABEL}.`)
}

const forbidden = (message: string) => new ApiError('credential_scope_forbidden', message)

/**
 * The rule of an `acme` credential, checked by every record write (in every call style) under
 * the subdomain's lock: the record must be a TXT record under `_acme-challenge`, on a subdomain
 * the credential covers (its one subdomain, or any of its account's). Other principals pass.
 */
export function checkAcmeScope(p: Principal, s: SubdomainRow, record: { type: string; name: string }): void {
  if (p.scope !== 'acme') return
  if (p.scopeSubdomainId !== null && p.scopeSubdomainId !== s.id)
    throw forbidden(
      `this ACME-only credential is for subdomain ${p.scopeSubdomainId}; it may not change ${s.fullDomain}`,
    )
  if (record.type !== 'TXT' || !isAcmeChallengeName(record.name)) throw forbidden(ACME_ONLY_MESSAGE)
}
