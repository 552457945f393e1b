import { defineErrorCodes } from '@quartet/core/errors'

/** key-info's domain codes; the envelope shows only the HTTP status, the log shows the code. */
export const keyInfoErrorStatus = defineErrorCodes({
  missing_authentication: 401,
  invalid_api_key: 401,
  api_key_disabled: 401,
  api_key_expired: 401,
  management_key_required: 403,
  key_not_found: 404,
  workspace_not_found: 404,
  external_api_key_in_use: 409,
  /** A usage batch would take a key's all-time total past MAX_KEY_TOTAL_USD (money.ts). */
  key_total_limit_exceeded: 422,
} as const)

declare module '@quartet/core/errors' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ErrorCodeTable extends Readonly<typeof keyInfoErrorStatus> {}
}
