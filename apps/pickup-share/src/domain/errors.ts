import { defineErrorCodes } from '@quartet/core/errors'

/** pickup-share's domain error codes and their HTTP statuses (the one table, see core errors). */
export const shareErrorStatus = defineErrorCodes({
  share_not_found: 404,
  share_used_up: 410,
  share_expired: 410,
  share_password_required: 401,
  share_password_wrong: 403,
  file_not_found: 404,
  store_unavailable: 400,
  upload_token_invalid: 401,
  upload_token_expired: 401,
  upload_exists: 409,
  file_too_large: 413,
  range_not_satisfiable: 416,
  upload_not_issued: 400,
  upload_already_shared: 409,
  upload_expired: 410,
  upload_missing: 400,
  upload_not_found: 404,
  size_mismatch: 400,
  unlimited_disabled: 403,
  auth_code_missing: 403,
  auth_code_invalid: 403,
  auth_code_used: 403,
  auth_code_expired: 403,
  auth_code_revoked: 403,
  auth_code_scope: 403,
  auth_code_not_found: 404,
  session_required: 401,
  invalid_password: 401,
  admin_disabled: 503,
  csrf_rejected: 403,
  settings_invalid: 400,
  storage_failed: 502,
  store_full: 507,
  insufficient_storage: 507,
  store_exists: 409,
  store_builtin: 409,
  store_not_found: 404,
  store_in_use: 409,
  preview_unavailable: 415,
} as const)

declare module '@quartet/core/errors' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ErrorCodeTable extends Readonly<typeof shareErrorStatus> {}
}
