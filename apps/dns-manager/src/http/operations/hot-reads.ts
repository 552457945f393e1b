import type { HotRead } from '@quartet/core/operation'

/**
 * What dns-manager's hot reads (define.ts, `hot`) are made of and how they stay true. Every one
 * first admits the caller: the credential and its account, kept per process under the account's
 * version token in Redis (store/principal-cache.ts), and one rate-limit point in Redis.
 */
const CALLER =
  "the caller's credential and account (per process, under the account's version token in Redis) and its rate-limit count in Redis"

/** The account's views: kept per process under the same token (store/view-cache.ts). */
const ACCOUNT_TOKEN =
  "a committed change to the account, its credentials, subdomains or records replaces the account's version token in Redis, so every replica reads again; a value is kept PRINCIPAL_CACHE_MAX_AGE_MS at most, and a subdomain's status turns at its expiry without a write (the view ends then)"

/** A read of the caller's account, from its views. */
export function accountView(what: string): HotRead {
  return { dependsOn: `${CALLER}; ${what} (the account's views)`, invalidatedBy: ACCOUNT_TOKEN }
}

/** A read of what is the same for every account: the zones offered and the settings. */
export function siteRead(what: string): HotRead {
  return {
    dependsOn: `${CALLER}; ${what}`,
    invalidatedBy: `nothing is kept past the request but the caller: ${ACCOUNT_TOKEN}`,
  }
}
