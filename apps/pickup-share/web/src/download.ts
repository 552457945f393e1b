import { type Access, ApiFailure, take } from './api.ts'

/** The address of download all: one .zip of the whole share, counted as one download. */
export const downloadAllUrl = (access: Access) =>
  `/api/download-all?${new URLSearchParams({ ...access }).toString()}`

/**
 * Checks a download before the browser gets it, so the page can say what went wrong instead of
 * the browser saving an empty or error file: a HEAD (counts nothing; the server also looks at
 * the store). A HEAD answer has no body, so a 404/410 is explained by asking take, which says
 * used up (410 share_used_up), expired (410 share_expired, with the date) or unknown; when the
 * share is still open, the file itself is what is missing.
 */
export async function preflight(url: string, access: Access, password?: string): Promise<void> {
  let res: Response
  try {
    res = await fetch(url, { method: 'HEAD', credentials: 'same-origin', cache: 'no-store' })
  } catch {
    throw new ApiFailure(0, 'network', 'network error')
  }
  if (res.ok) return
  const retry = res.headers.get('retry-after')
  const retryAfter = retry && /^\d+$/.test(retry) ? Number(retry) : null
  if (res.status === 404 || res.status === 410) {
    await take(access, password) // throws the share's own failure (used up, expired, not found)
    throw new ApiFailure(404, 'file_not_found', 'file not found')
  }
  const code =
    res.status === 401
      ? 'share_password_required'
      : res.status === 403
        ? 'share_password_wrong'
        : res.status === 429
          ? 'rate_limit_exceeded'
          : res.status === 502
            ? 'storage_failed'
            : res.status === 503
              ? 'service_unavailable'
              : res.status >= 500
                ? 'internal_error'
                : 'bad_request'
  throw new ApiFailure(res.status, code, res.statusText, {}, retryAfter)
}

/** Hands a checked download to the browser (an attachment: the page stays). */
export function handOff(url: string, name: string): void {
  const a = document.createElement('a')
  a.href = url
  a.download = name
  a.rel = 'noopener'
  document.body.append(a)
  a.click()
  a.remove()
}
