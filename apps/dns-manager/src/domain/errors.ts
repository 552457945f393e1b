import { defineErrorCodes } from '@quartet/core/errors'

/** dns-manager's domain codes (the seed's unified error table plus three of our own), registered once. */
export const dnsErrorStatus = defineErrorCodes({
  auth_invalid_credentials: 401,
  auth_ip_not_allowed: 403,
  api_access_disabled: 403,
  credential_scope_forbidden: 403,
  subdomain_not_found: 404,
  dns_record_not_found: 404,
  insufficient_balance: 402,
  renewal_not_yet_available: 422,
  renewal_window_expired: 403,
  quota_exceeded: 429,
  provider_operation_failed: 502,
  subdomain_taken: 409,
  key_limit_reached: 409,
  // the back office (people.ts)
  auth_invalid_password: 401,
  session_required: 401,
  registration_closed: 403,
  invite_required: 403,
  link_invalid: 400,
  account_exists: 409,
  mail_unavailable: 503,
} as const)

declare module '@quartet/core/errors' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ErrorCodeTable extends Readonly<typeof dnsErrorStatus> {}
}
