import { isValidCidrOrIp } from '@quartet/core/auth'
import { ApiError } from '@quartet/core/errors'
import type { Principal } from './principal.ts'
import { auditWeb, type PeopleDeps } from './people-common.ts'
import type { AccountRow } from './ports.ts'
import { iso } from './views.ts'

// What only the account's holder may see and change from the back office (people.ts): the API
// switch, the IP allow list, the account, the audit log.

/**
 * The account's settings: the API access switch (the API answers 403 api_access_disabled from the
 * next request on) and the IP allow list (IPv4, IPv6, CIDR). The page session itself is not
 * bound by either: the holder must be able to turn the API back on.
 */
export async function updateAccountSettings(
  deps: PeopleDeps,
  p: Principal,
  input: { api_access_enabled?: boolean | undefined; ip_allow_list?: string[] | undefined },
) {
  const data: { apiAccessEnabled?: boolean; ipAllowList?: string[] } = {}
  if (input.api_access_enabled !== undefined) data.apiAccessEnabled = input.api_access_enabled
  if (input.ip_allow_list !== undefined) {
    const list = [...new Set(input.ip_allow_list.map((e) => e.trim()).filter(Boolean))]
    const bad = list.find((e) => !isValidCidrOrIp(e))
    if (bad)
      throw new ApiError('bad_request', `ip_allow_list: ${bad} is not an IPv4/IPv6 address or CIDR range`, {
        field: 'ip_allow_list',
        value: bad,
      })
    data.ipAllowList = list
  }
  const account = await deps.accounts.updateAccount(p.accountId, data)
  if (!account) throw new ApiError('session_required', 'sign in first')
  const changes = [
    ...(data.apiAccessEnabled !== undefined ? [`api_access=${data.apiAccessEnabled ? 'on' : 'off'}`] : []),
    ...(data.ipAllowList ? [`ip_allow_list=${data.ipAllowList.length}`] : []),
  ]
  await auditWeb(deps, p.accountId, p.ip, 'account.settings', 'ok', changes.join(' ') || null)
  return { account: accountView(account, p.ip) }
}

export function accountView(a: AccountRow, ip: string | undefined) {
  return {
    id: a.id,
    email: a.email,
    balance_cents: a.balanceCents,
    quota_total: a.quotaTotal,
    api_access_enabled: a.apiAccessEnabled,
    ip_allow_list: a.ipAllowList,
    your_ip: ip ?? null,
  }
}

export async function accountOf(deps: PeopleDeps, p: Principal) {
  const a = await deps.accounts.getAccount(p.accountId)
  if (!a) throw new ApiError('session_required', 'sign in first')
  return { account: accountView(a, p.ip) }
}

/** What the API and the pages did on the account, from where; newest first. */
export async function auditLog(
  deps: PeopleDeps,
  p: Principal,
  input: { limit: number; before?: string | undefined },
) {
  const rows = await deps.audit.listAudit(p.accountId, { limit: input.limit, beforeId: input.before })
  return {
    entries: rows.map((r) => ({
      id: r.id,
      at: iso(r.createdAt),
      operation: r.operation,
      target: r.target,
      outcome: r.outcome,
      via: r.via,
      ip: r.ip,
      credential_id: r.credentialId,
    })),
    next_before: rows.length === input.limit ? rows[rows.length - 1]!.id : null,
  }
}
