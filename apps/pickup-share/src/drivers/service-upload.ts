import type { IssueUploadInput, UploadPermission } from '../domain/storage.ts'

/**
 * How a driver whose bytes come through this service (blob, repo) grants an upload: a PUT to the
 * service's own upload route, carrying a signed token that route checks.
 */
export interface ServiceUpload {
  /** Where browsers send the PUT, e.g. `/api/blob/upload` (our own server: the token never leaves it). */
  uploadUrl: string
  /** Signs a client-direct upload permission (the HMAC token of the upload route). */
  signUpload: (claims: { instance: string } & IssueUploadInput) => string
}

/** The permission of an upload through the service, for `claims` (what the token vouches for). */
export function servicePutPermission(
  options: ServiceUpload,
  claims: { instance: string } & IssueUploadInput,
): UploadPermission {
  return {
    url: options.uploadUrl,
    method: 'PUT',
    headers: { 'content-type': 'application/octet-stream', 'x-upload-token': options.signUpload(claims) },
  }
}
