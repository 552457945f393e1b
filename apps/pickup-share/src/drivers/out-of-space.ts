import { ApiError } from '@quartet/core/errors'

/** errno codes of a full disk or a filesystem quota. */
const ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EFBIG'])
/** What git (local cache or remote) and S3-compatible servers say when they are full. */
const MESSAGE = /No space left on device|Disk quota exceeded|File too large|quota exceeded|storage full/i
const S3_CODES = new Set([
  'XMinioStorageFull',
  'StorageFull',
  'QuotaExceeded',
  'InsufficientStorage',
  'XMinioAdminBucketQuotaExceeded',
])

/** Whether `err` (or its cause) says the storage has no room: a full disk, a quota, a full bucket. */
export function isOutOfSpace(err: unknown): boolean {
  for (let e: unknown = err; e && typeof e === 'object'; e = (e as { cause?: unknown }).cause) {
    const { code, message, stderr } = e as { code?: unknown; message?: unknown; stderr?: unknown }
    if (typeof code === 'string' && (ERRNO.has(code) || S3_CODES.has(code))) return true
    if (typeof stderr === 'string' && MESSAGE.test(stderr)) return true
    if (typeof message === 'string' && MESSAGE.test(message)) return true
  }
  return false
}

/** 507 insufficient_storage: the store itself had no room (nothing was kept). */
export function outOfSpace(store: string, cause?: unknown): ApiError {
  return new ApiError(
    'insufficient_storage',
    `the ${store} store has no room for this upload right now; nothing was kept`,
    undefined,
    cause === undefined ? undefined : { cause },
  )
}
