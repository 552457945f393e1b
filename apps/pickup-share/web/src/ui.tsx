import { CopyButton as SharedCopyButton } from '@quartet/web-pages/ui'
import { failureText } from './errors.ts'
import { t } from './i18n.ts'

export { Alert } from '@quartet/web-pages/ui'

/** A copy button that says whether it worked (in a live region), in the page's language. */
export function CopyButton(props: { text: string; label: string; testId?: string }) {
  return <SharedCopyButton {...props} copied={t('common.copied')} failed={t('common.copyFailed')} />
}

/**
 * A message for an API failure that no page-specific message covers: translated by its code,
 * the code as the detail (errors.ts), never the server's English text.
 */
export function describeFailure(err: unknown): string {
  return failureText(err)
}
