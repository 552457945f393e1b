import { useState } from 'preact/hooks'
import { failureText } from './errors.ts'
import { t } from './i18n.ts'

/** A copy button that says whether it worked (in a live region). */
export function CopyButton({ text, label, testId }: { text: string; label: string; testId?: string }) {
  const [state, setState] = useState<'idle' | 'ok' | 'failed'>('idle')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
      setState('ok')
    } catch {
      setState('failed')
    }
    setTimeout(() => setState('idle'), 2500)
  }
  return (
    <span class="copy">
      <button type="button" class="secondary" onClick={copy} data-testid={testId}>
        {label}
      </button>
      <span role="status" class="copy-status">
        {state === 'ok' ? t('common.copied') : state === 'failed' ? t('common.copyFailed') : ''}
      </span>
    </span>
  )
}

/**
 * A message for an API failure that no page-specific message covers: translated by its code,
 * the code as the detail (errors.ts), never the server's English text.
 */
export function describeFailure(err: unknown): string {
  return failureText(err)
}

export function Alert({
  kind,
  children,
  testId,
}: {
  kind: 'error' | 'ok' | 'info'
  children: unknown
  testId?: string
}) {
  return (
    <p class={`alert ${kind}`} role={kind === 'error' ? 'alert' : 'status'} data-testid={testId}>
      {children as never}
    </p>
  )
}
