import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { CopyButton as SharedCopyButton } from '@quartet/web-pages/ui'
import { type Account, ApiFailure, api } from './api.ts'
import { formatWait, t } from './i18n.ts'

/** A message for a failure: the API's own message (the same the API gives its clients), or ours for the network. */
export function describeFailure(err: unknown): string {
  if (err instanceof ApiFailure) {
    if (err.code === 'network') return t('common.network')
    if (err.code === 'rate_limit_exceeded')
      return t('common.tooMany', { wait: formatWait(err.retryAfter ?? 60) })
    if (err.code === 'session_required') return t('common.signedOut')
    return err.message
  }
  return t('common.error', { message: err instanceof Error ? err.message : String(err) })
}

/** The field a failure names (`details.field`), for marking that input. */
export const fieldOf = (err: unknown): string | undefined =>
  err instanceof ApiFailure && typeof err.details.field === 'string' ? err.details.field : undefined

export { Alert, TableWrap } from '@quartet/web-pages/ui'

/** A copy button that says whether it worked (in a live region), in the page's language. */
export function CopyButton(props: { text: string; label: string; testId?: string }) {
  return (
    <SharedCopyButton
      {...props}
      buttonClass="secondary small"
      copied={t('common.copied')}
      failed={t('common.copyFailed')}
    />
  )
}

/**
 * `{ type }` as one of the shapes Preact's types give an input of that type (each type allows its
 * own ARIA roles), so that a type chosen at run time still type-checks.
 */
const inputType = (type: 'text' | 'email' | 'password') =>
  type === 'email' ? { type } : type === 'password' ? { type } : { type }

/** A labelled input; `error` (when it names this field) is announced and tied to it. */
export function Field(props: {
  id: string
  label: string
  value: string
  onInput: (v: string) => void
  type?: 'text' | 'email' | 'password'
  hint?: string
  error?: string | null
  required?: boolean
  autoComplete?: string
  inputMode?: 'numeric' | 'text' | 'email'
}) {
  const describedBy = [props.hint ? `${props.id}-hint` : '', props.error ? `${props.id}-error` : '']
    .filter(Boolean)
    .join(' ')
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        {...inputType(props.type ?? 'text')}
        value={props.value}
        required={props.required}
        autoComplete={props.autoComplete}
        inputMode={props.inputMode}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={describedBy || undefined}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
        data-testid={props.id}
      />
      {props.hint && (
        <small id={`${props.id}-hint`} class="muted">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={`${props.id}-error`} class="field-error">
          {props.error}
        </small>
      )}
    </div>
  )
}

/** The signed-in account, or a move to the sign-in page when there is no session. */
export function useAccount(): [Account | null, () => void, unknown] {
  const [account, setAccount] = useState<Account | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [version, setVersion] = useState(0)
  useEffect(() => {
    api
      .account()
      .then((r) => setAccount(r.account))
      .catch((err) => {
        if (err instanceof ApiFailure && err.code === 'session_required')
          location.assign(`/account/signin?next=${encodeURIComponent(location.pathname)}`)
        else setError(err)
      })
  }, [version])
  return [account, () => setVersion((v) => v + 1), error]
}

export function Loading() {
  return (
    <p class="muted" role="status">
      {t('common.loading')}
    </p>
  )
}

/** The page's heading, focused on arrival so a screen reader starts there. */
export function PageTitle({ children, id }: { children: ComponentChildren; id: string }) {
  return (
    <h1 id={id} tabIndex={-1}>
      {children}
    </h1>
  )
}
