import { generateToken, hashToken } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import type { DomainDeps } from './deps.ts'
import type { CredentialScope } from './ports.ts'
import { iso } from './views.ts'

type CredentialDeps = Pick<DomainDeps, 'credentials' | 'settings'>

/** A public key (prefix + 128 random bits) and a 64-hex secret; only the secret's SHA-256 is stored. */
export function issueCredential(prefix: string) {
  const apiKey = generateToken(prefix, 16)
  const apiSecret = generateToken('', 32)
  return { apiKey, apiSecret, stored: { publicKey: apiKey, secretHash: hashToken(apiSecret) } }
}

/** Scoped credentials of one scope that one subdomain (or, account-wide, one account) may have. */
export const MAX_SCOPED_KEYS_PER_SUBDOMAIN = 5

const SCOPE_NAMES: Record<Exclude<CredentialScope, 'full'>, string> = {
  dyndns: 'update-only (dyndns)',
  acme: 'ACME-only',
}

export async function listKeys(deps: CredentialDeps, p: Principal) {
  const keys = await deps.credentials.listCredentials(p.accountId)
  return {
    keys: keys.map((k) => ({
      id: k.id,
      api_key: k.publicKey,
      scope: k.scope,
      subdomain_id: k.subdomainId,
      created_at: iso(k.createdAt),
      last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
      current: k.id === p.credentialId,
    })),
  }
}

/**
 * A new credential, its secret shown once: a `full` API key of the account (at most
 * MAX_API_KEYS); with `scope: 'dyndns'` and a subdomain, an update-only credential that can do
 * nothing but set that subdomain's addresses through /nic/update (for a router or ddclient); with
 * `scope: 'acme'`, an ACME-only credential that can do nothing but add and remove TXT records
 * under `_acme-challenge` (DNS-01), on the subdomain given or, without one, on every subdomain of
 * the account. Scoped credentials are not counted among the API keys (at most 5 of a scope per
 * subdomain, or per account for account-wide ones).
 */
export async function createKey(
  deps: CredentialDeps,
  p: Principal,
  input: { scope?: CredentialScope | undefined; subdomain_id?: number | undefined } = {},
) {
  const { settings } = deps
  const scope = input.scope ?? 'full'
  const c = issueCredential(settings.apiKeyPrefix)
  const view = (row: { id: string; createdAt: Date; subdomainId: number | null }) => ({
    key: {
      id: row.id,
      api_key: c.apiKey,
      api_secret: c.apiSecret,
      scope,
      subdomain_id: row.subdomainId,
      created_at: iso(row.createdAt),
    },
  })
  if (scope === 'full') {
    if (input.subdomain_id !== undefined)
      throw new ApiError(
        'bad_request',
        'subdomain_id: only a scoped key (scope dyndns or acme) names a subdomain',
        { field: 'subdomain_id' },
      )
    const row = await deps.credentials.addCredentialWithinLimit(p.accountId, c.stored, settings.maxApiKeys)
    if (row === 'limit')
      throw new ApiError('key_limit_reached', `an account holds at most ${settings.maxApiKeys} API keys`, {
        limit: settings.maxApiKeys,
      })
    return view(row)
  }
  if (input.subdomain_id === undefined && scope === 'dyndns')
    throw new ApiError('bad_request', `subdomain_id: a ${scope} key is for one subdomain; name it`, {
      field: 'subdomain_id',
    })
  const row = await deps.credentials.addScopedCredential(
    p.accountId,
    scope,
    input.subdomain_id ?? null,
    c.stored,
    MAX_SCOPED_KEYS_PER_SUBDOMAIN,
  )
  if (row === null)
    throw new ApiError('subdomain_not_found', `no subdomain ${input.subdomain_id} on this account`)
  if (row === 'limit')
    throw new ApiError(
      'key_limit_reached',
      `${input.subdomain_id === undefined ? 'an account' : 'a subdomain'} holds at most ${MAX_SCOPED_KEYS_PER_SUBDOMAIN} ${SCOPE_NAMES[scope]} keys`,
      { limit: MAX_SCOPED_KEYS_PER_SUBDOMAIN },
    )
  return view(row)
}

export async function deleteKey(deps: CredentialDeps, p: Principal, input: { id: string }) {
  if (!(await deps.credentials.deleteCredential(p.accountId, input.id)))
    throw new ApiError('not_found', `no API key ${input.id} on this account`)
  return { deleted: true as const, id: input.id }
}

export async function regenerateKey(deps: CredentialDeps, p: Principal, input: { id: string }) {
  const c = issueCredential(deps.settings.apiKeyPrefix)
  const row = await deps.credentials.replaceCredentialSecret(p.accountId, input.id, c.stored.secretHash)
  if (!row) throw new ApiError('not_found', `no API key ${input.id} on this account`)
  return {
    key: {
      id: row.id,
      api_key: row.publicKey,
      api_secret: c.apiSecret,
      scope: row.scope,
      subdomain_id: row.subdomainId,
      created_at: iso(row.createdAt),
    },
  }
}
