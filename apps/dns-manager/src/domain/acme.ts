import { createHash } from 'node:crypto'
import { ApiError } from '@quartet/core/errors'
import { ACME_CHALLENGE_LABEL, checkAcmeScope } from './acme-scope.ts'
import type { Principal } from './principal.ts'
import { planCreate } from './dns-records.ts'
import type { DomainDeps } from './deps.ts'
import { normaliseRecordName, ownerLabelOf } from './names.ts'
import type { SubdomainRow } from './ports.ts'
import { type SyncDeps, writeRecord } from './sync.ts'

/**
 * ACME DNS-01 (RFC 8555 §8.4): a client proves control of a name by serving a TXT record at
 * `_acme-challenge.<name>`. The operations here are lego's `httpreq` protocol (present a value,
 * clean it up). The rule of the ACME-only credential, which may write and delete such TXT
 * records and nothing else, is in acme-scope.ts: authentication and every record write apply it.
 */

/** The TTL of a challenge RRset: short, so a stale value is not cached past the next attempt. */
export const ACME_TXT_TTL = 60
/** A DNS-01 value is the unpadded base64url of a SHA-256 digest (43 characters); allow any base64url token. */
const CHALLENGE_VALUE = /^[A-Za-z0-9_-]{1,255}$/

/** RFC 8555 §8.4: the TXT value is base64url(SHA-256(key authorization)), without padding. */
export function dns01TxtValue(keyAuthorization: string): string {
  return createHash('sha256').update(keyAuthorization, 'utf8').digest('base64url')
}

/**
 * What lego's httpreq provider sends: the default mode `{fqdn, value}` (the name and the TXT
 * value, computed by the client), or the RAW mode `{domain, token, keyAuth}` (the value is
 * computed here from the key authorization).
 */
export interface AcmeChallengeInput {
  fqdn?: string | undefined
  value?: string | undefined
  domain?: string | undefined
  token?: string | undefined
  keyAuth?: string | undefined
}

const badField = (field: string, message: string) =>
  new ApiError('bad_request', `${field}: ${message}`, { field, issues: [{ field, message }] })

/** The challenge's fully qualified name (no trailing dot) and TXT value, from either mode. */
export function challengeOf(input: AcmeChallengeInput): { fqdn: string; value: string } {
  const raw = input.domain !== undefined || input.keyAuth !== undefined || input.token !== undefined
  if (raw && (input.fqdn !== undefined || input.value !== undefined))
    throw new ApiError(
      'bad_request',
      'give either fqdn and value (default mode) or domain, token and keyAuth (RAW mode), not both',
    )
  let fqdn: string
  let value: string
  if (raw) {
    if (!input.domain) throw badField('domain', 'is required in RAW mode')
    if (!input.keyAuth) throw badField('keyAuth', 'is required in RAW mode')
    // RFC 8555 §8.1: keyAuthorization = token || '.' || base64url(JWK thumbprint).
    const dot = input.keyAuth.indexOf('.')
    if (dot <= 0 || dot === input.keyAuth.length - 1)
      throw badField('keyAuth', 'must be a key authorization, "<token>.<account key thumbprint>"')
    if (input.token !== undefined && input.keyAuth.slice(0, dot) !== input.token)
      throw badField('keyAuth', 'does not belong to this token')
    // A wildcard's authorization is for its base name (RFC 8555 §7.1.3); accept either spelling.
    const domain = input.domain.trim().toLowerCase().replace(/\.$/, '').replace(/^\*\./, '')
    fqdn = `${ACME_CHALLENGE_LABEL}.${domain}`
    value = dns01TxtValue(input.keyAuth)
  } else {
    if (!input.fqdn) throw badField('fqdn', 'is required (or domain, token and keyAuth in RAW mode)')
    if (!input.value) throw badField('value', 'is required')
    fqdn = input.fqdn.trim().toLowerCase().replace(/\.$/, '')
    value = input.value
  }
  if (!fqdn.startsWith(`${ACME_CHALLENGE_LABEL}.`))
    throw badField(raw ? 'domain' : 'fqdn', `a DNS-01 challenge name starts with ${ACME_CHALLENGE_LABEL}.`)
  if (!CHALLENGE_VALUE.test(value))
    throw badField('value', 'must be the base64url digest of a key authorization (RFC 8555 §8.4)')
  return { fqdn, value }
}

/** The account's subdomain a challenge name lies in, and the name relative to it. */
async function locate(
  deps: Pick<DomainDeps, 'zones' | 'subdomains'>,
  p: Principal,
  fqdn: string,
): Promise<{ s: SubdomainRow; name: string }> {
  const zones = (await deps.zones.listZones()).map((z) => z.name).sort((a, b) => b.length - a.length)
  const zone = zones.find((z) => ownerLabelOf(z, fqdn) !== null)
  const label = zone && ownerLabelOf(zone, fqdn)
  const s = label ? await deps.subdomains.findSubdomainByName(`${label}.${zone}`) : null
  // Another account's subdomain is as unknown as one that does not exist.
  if (!s || s.accountId !== p.accountId || s.state !== 'active' || fqdn === s.fullDomain)
    throw new ApiError('subdomain_not_found', `no subdomain of this account holds ${fqdn}`)
  return { s, name: normaliseRecordName(`${fqdn}.`, s.fullDomain) }
}

/** Thrown inside the locked plan when the change is already made (or already undone). */
class Unchanged extends Error {}

export interface ChallengeOutcome {
  challenge: { fqdn: string; value: string; subdomain_id: number; changed: boolean }
}

/**
 * Adds the value to the TXT RRset at the challenge name, leaving any other value there (a
 * wildcard and its base name are validated with two values at one name, at the same time).
 * Idempotent: a value already served is success with `changed: false`. An ordinary record write:
 * under the subdomain's lock, within the record quota, pushed to the provider before it answers.
 */
export async function presentChallenge(
  deps: SyncDeps & Pick<DomainDeps, 'zones'>,
  p: Principal,
  input: AcmeChallengeInput,
): Promise<ChallengeOutcome> {
  const { fqdn, value } = challengeOf(input)
  const { s, name } = await locate(deps, p, fqdn)
  const outcome = { fqdn: `${fqdn}.`, value, subdomain_id: s.id, changed: true }
  try {
    await writeRecord(deps, p, s.id, (sub, records) => {
      checkAcmeScope(p, sub, { type: 'TXT', name })
      const same = records.find(
        (r) => r.name === name && r.type === 'TXT' && r.content === value && r.state !== 'pending_delete',
      )
      if (same?.state === 'active') throw new Unchanged()
      if (same)
        throw new ApiError('conflict', `${fqdn} has a change of this value in progress; retry in a moment`)
      return planCreate(deps.settings, sub, records, {
        type: 'TXT',
        name,
        content: value,
        ttl: ACME_TXT_TTL,
      })
    })
  } catch (err) {
    if (!(err instanceof Unchanged)) throw err
    outcome.changed = false
  }
  return { challenge: outcome }
}

/**
 * Removes exactly the value given from the TXT RRset at the challenge name; the others stay.
 * Idempotent: a value that is not there is success with `changed: false`.
 */
export async function cleanupChallenge(
  deps: SyncDeps & Pick<DomainDeps, 'zones'>,
  p: Principal,
  input: AcmeChallengeInput,
): Promise<ChallengeOutcome> {
  const { fqdn, value } = challengeOf(input)
  const { s, name } = await locate(deps, p, fqdn)
  const outcome = { fqdn: `${fqdn}.`, value, subdomain_id: s.id, changed: true }
  try {
    await writeRecord(deps, p, s.id, (sub, records) => {
      checkAcmeScope(p, sub, { type: 'TXT', name })
      const same = records.filter((r) => r.name === name && r.type === 'TXT' && r.content === value)
      const live = same.find((r) => r.state === 'active')
      if (live) return { op: 'delete', id: live.id }
      if (same.some((r) => r.state === 'pending_create' || r.state === 'pending_update'))
        throw new ApiError('conflict', `${fqdn} has a change of this value in progress; retry in a moment`)
      throw new Unchanged()
    })
  } catch (err) {
    if (!(err instanceof Unchanged)) throw err
    outcome.changed = false
  }
  return { challenge: outcome }
}
