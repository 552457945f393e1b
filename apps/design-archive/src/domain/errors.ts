import { defineErrorCodes } from '@quartet/core/errors'

/** design-archive's own error codes, added to the one code→status table. */
export const designArchiveErrorStatus = defineErrorCodes({
  release_not_found: 404,
  release_exists: 409,
  content_invalid: 422,
} as const)

declare module '@quartet/core/errors' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface ErrorCodeTable extends Readonly<typeof designArchiveErrorStatus> {}
}
