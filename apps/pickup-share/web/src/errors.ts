import { ApiFailure } from './api.ts'
import { type Key, t } from './i18n.ts'

/**
 * Every error code the server (and the page itself) can answer with, and its message in the
 * page's language. The server's English text is never shown as the message: the code is the
 * detail that support can look up (README "Web pages"). test/unit/web-errors.test.ts checks
 * that every code of the server's table has a message here in both languages.
 */
export const ERROR_CODES = [
  'network',
  'aborted',
  'bad_request',
  'unauthorized',
  'forbidden',
  'csrf_rejected',
  'not_found',
  'method_not_allowed',
  'request_timeout',
  'conflict',
  'gone',
  'payload_too_large',
  'unsupported_media_type',
  'unprocessable_entity',
  'rate_limit_exceeded',
  'header_fields_too_large',
  'internal_error',
  'bad_gateway',
  'service_unavailable',
  'share_not_found',
  'share_used_up',
  'share_expired',
  'share_password_required',
  'share_password_wrong',
  'file_not_found',
  'store_unavailable',
  'upload_token_invalid',
  'upload_token_expired',
  'upload_exists',
  'file_too_large',
  'range_not_satisfiable',
  'upload_not_issued',
  'upload_already_shared',
  'upload_expired',
  'upload_missing',
  'upload_not_found',
  'size_mismatch',
  'unlimited_disabled',
  'auth_code_missing',
  'auth_code_invalid',
  'auth_code_used',
  'auth_code_expired',
  'auth_code_revoked',
  'auth_code_scope',
  'auth_code_not_found',
  'session_required',
  'invalid_password',
  'admin_disabled',
  'settings_invalid',
  'storage_failed',
  'store_full',
  'insufficient_storage',
  'store_exists',
  'store_builtin',
  'store_not_found',
  'store_in_use',
  'preview_unavailable',
] as const

const KNOWN = new Set<string>(ERROR_CODES)

/** The translated message of an error code (a generic one for a code this page does not know). */
export function errorMessage(code: string): string {
  return t(KNOWN.has(code) ? (`error.${code}` as Key) : 'error.unknown')
}

/**
 * What the page says about a failure: the translated message, and the code as a detail
 * (`The authorization code is not valid. (auth_code_invalid)`). Network failures and
 * cancellations have no detail.
 */
export function failureText(err: unknown): string {
  if (!(err instanceof ApiFailure)) return t('error.unknown')
  const message = errorMessage(err.code)
  if (err.code === 'network' || err.code === 'aborted') return message
  return `${message}${t('error.detail', { code: err.code })}`
}
