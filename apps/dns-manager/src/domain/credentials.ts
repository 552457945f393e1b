import { generateToken, hashToken } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { Principal } from './accounts.ts'
import type { DomainDeps } from './deps.ts'
import { iso } from './views.ts'

type CredentialDeps = Pick<DomainDeps, 'credentials' | 'settings'>

/** A public key (prefix + 128 random bits) and a 64-hex secret; only the secret's SHA-256 is stored. */
export function issueCredential(prefix: string) {
  const apiKey = generateToken(prefix, 16)
  const apiSecret = generateToken('', 32)
  return { apiKey, apiSecret, stored: { publicKey: apiKey, secretHash: hashToken(apiSecret) } }
}

export async function listKeys(deps: CredentialDeps, p: Principal) {
  const keys = await deps.credentials.listCredentials(p.accountId)
  return {
    keys: keys.map((k) => ({
      id: k.id,
      api_key: k.publicKey,
      created_at: iso(k.createdAt),
      last_used_at: k.lastUsedAt ? iso(k.lastUsedAt) : null,
      current: k.id === p.credentialId,
    })),
  }
}

export async function createKey(deps: CredentialDeps, p: Principal) {
  const { settings } = deps
  const c = issueCredential(settings.apiKeyPrefix)
  const row = await deps.credentials.addCredentialWithinLimit(p.accountId, c.stored, settings.maxApiKeys)
  if (row === 'limit')
    throw new ApiError('key_limit_reached', `an account holds at most ${settings.maxApiKeys} API keys`, {
      limit: settings.maxApiKeys,
    })
  return {
    key: { id: row.id, api_key: c.apiKey, api_secret: c.apiSecret, created_at: iso(row.createdAt) },
  }
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
    key: { id: row.id, api_key: row.publicKey, api_secret: c.apiSecret, created_at: iso(row.createdAt) },
  }
}
