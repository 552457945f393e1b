/**
 * The page parts both services' pages use (Preact). They show only what they are given: the
 * texts come from the app, already in the language shown. The classes are the shared
 * stylesheet's (style.css).
 */
import type { ComponentChildren } from 'preact'
import { useState } from 'preact/hooks'

/** A message: an error is an alert (announced at once), anything else a status. */
export function Alert({
  kind,
  children,
  testId,
}: {
  kind: 'error' | 'ok' | 'info'
  children: ComponentChildren
  testId?: string
}) {
  return (
    <p class={`alert ${kind}`} role={kind === 'error' ? 'alert' : 'status'} data-testid={testId}>
      {children}
    </p>
  )
}

/** The state a copy button shows, and for how long a result stays. */
export type CopyState = 'idle' | 'ok' | 'failed'
export const COPY_RESULT_MS = 2500

/** A copy button that says whether it worked (in a live region): `copied` or `failed`. */
export function CopyButton({
  text,
  label,
  copied,
  failed,
  buttonClass = 'secondary',
  testId,
}: {
  text: string
  label: string
  copied: string
  failed: string
  buttonClass?: string
  testId?: string
}) {
  const [state, setState] = useState<CopyState>('idle')
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text)
      setState('ok')
    } catch {
      setState('failed')
    }
    setTimeout(() => setState('idle'), COPY_RESULT_MS)
  }
  return (
    <span class="copy">
      <button type="button" class={buttonClass} onClick={copy} data-testid={testId}>
        {label}
      </button>
      <span role="status" class="copy-status">
        {state === 'ok' ? copied : state === 'failed' ? failed : ''}
      </span>
    </span>
  )
}

/** The language switch of a page's header: a select named by a visually hidden label. */
export function LanguageSelect<L extends string>({
  label,
  value,
  langs,
  onChange,
}: {
  label: string
  value: L
  langs: ReadonlyArray<{ id: L; label: string }>
  onChange: (lang: L) => void
}) {
  return (
    <label class="lang">
      <span class="visually-hidden">{label}</span>
      <select
        value={value}
        onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value as L)}
        data-testid="lang"
      >
        {langs.map((l) => (
          <option key={l.id} value={l.id} lang={l.id}>
            {l.label}
          </option>
        ))}
      </select>
    </label>
  )
}

/**
 * A table that may scroll sideways on a phone: a named region the keyboard can reach and scroll.
 * Named by `label`, or by the element `labelledBy` names.
 */
export function TableWrap({
  label,
  labelledBy,
  children,
}: {
  label?: string
  labelledBy?: string
  children: ComponentChildren
}) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={label} aria-labelledby={labelledBy}>
      {children}
    </div>
  )
}
