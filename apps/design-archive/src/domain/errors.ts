import { defineErrorCodes } from '@quartet/core/errors'

/** design-archive's own error codes, added to the one code→status table. */
export const designArchiveErrorStatus = defineErrorCodes({
  release_not_found: 404,
  /** If-Match or If-Unmodified-Since does not hold for the document (RFC 9110 §13.1.1, §13.1.4). */
  precondition_failed: 412,
  release_exists: 409,
  content_invalid: 422,
} as const)

declare module '@quartet/core/errors' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ErrorCodeTable extends Readonly<typeof designArchiveErrorStatus> {}
}
