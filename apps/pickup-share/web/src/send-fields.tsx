import { useEffect, useRef } from 'preact/hooks'
import { ApiFailure, PASSWORD_MAX, PASSWORD_MIN, type SiteInfo } from './api.ts'
import { formatBytes, t } from './i18n.ts'
import { describeFailure } from './ui.tsx'

/** The send page's fields and helpers (send.tsx holds the page and its flow). */

/** Speed (smoothed over ¼-second steps) and time left from a stream of progress events. */
export function progressMeter(
  report: (p: { sent: number; speed: number | undefined; eta: number | undefined }) => void,
) {
  let lastAt = 0
  let lastSent = 0
  let speed: number | undefined
  return (sent: number, total: number) => {
    const now = performance.now()
    if (lastAt === 0 || sent < lastSent) {
      lastAt = now
      lastSent = sent
    } else if (now - lastAt >= 250) {
      const instant = (sent - lastSent) / ((now - lastAt) / 1000)
      speed = speed === undefined ? instant : 0.7 * speed + 0.3 * instant
      lastAt = now
      lastSent = sent
    }
    report({ sent, speed, eta: speed ? (total - sent) / speed : undefined })
  }
}

/** What is wrong with a share password the server would refuse (an empty one: none is set). */
export function passwordIssue(password: string): string | null {
  if (!password) return null
  if (password.length < PASSWORD_MIN) return t('send.passwordShort', { min: PASSWORD_MIN })
  if (password.length > PASSWORD_MAX) return t('send.passwordLong', { max: PASSWORD_MAX })
  // Headers lose spaces at either end and carry no control characters (README "Password-protected shares").
  if (password.trim() !== password || [...password].some((c) => c.charCodeAt(0) < 0x20 || c === '\u007f'))
    return t('send.passwordSpaces')
  return null
}

/** Unlimited mode (an authorization code): shown when the site has it switched on. */
export function UnlimitedFields(props: {
  busy: boolean
  unlimited: boolean
  unlimitedDownloads: boolean
  setUnlimitedDownloads: (v: boolean) => void
  noSizeLimit: boolean
  setNoSizeLimit: (v: boolean) => void
  authCode: string
  setAuthCode: (v: string) => void
}) {
  return (
    <fieldset disabled={props.busy} class="unlimited">
      <legend>{t('send.unlimited')}</legend>
      <p class="muted small">{t('send.unlimitedHint')}</p>
      <label class="check">
        <input
          type="checkbox"
          checked={props.unlimitedDownloads}
          onChange={(e) => props.setUnlimitedDownloads((e.currentTarget as HTMLInputElement).checked)}
          data-testid="unlimited-downloads"
        />
        {t('send.unlimitedDownloads')}
      </label>
      <label class="check">
        <input
          type="checkbox"
          checked={props.noSizeLimit}
          onChange={(e) => props.setNoSizeLimit((e.currentTarget as HTMLInputElement).checked)}
        />
        {t('send.noSizeLimit')}
      </label>
      {props.unlimited && (
        <div class="field">
          <label for="auth-code">{t('send.authCode')}</label>
          <input
            id="auth-code"
            type="text"
            autoComplete="off"
            spellcheck={false}
            value={props.authCode}
            onInput={(e) => props.setAuthCode((e.currentTarget as HTMLInputElement).value)}
          />
        </div>
      )}
    </fieldset>
  )
}

/** The share's optional password: its error is tied to the field, as NumberField's are. */
export function PasswordField(props: { value: string; onInput: (v: string) => void }) {
  const issue = passwordIssue(props.value)
  return (
    <div class="field">
      <label for="share-password">{t('send.password')}</label>
      <input
        id="share-password"
        type="password"
        autoComplete="new-password"
        maxLength={PASSWORD_MAX + 1}
        value={props.value}
        aria-invalid={issue ? true : undefined}
        aria-describedby={`share-password-hint${issue ? ' share-password-error' : ''}`}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
        data-testid="share-password"
      />
      <span id="share-password-hint" class="muted small">
        {t('send.passwordHint')}
      </span>
      {issue && (
        <span id="share-password-error" class="field-error">
          {issue}
        </span>
      )}
    </div>
  )
}

export function NumberField(props: {
  id: string
  label: string
  hint: string
  value: string
  onInput: (v: string) => void
  min: number
  max: number
  invalid: boolean
  disabled?: boolean
}) {
  const showError = props.invalid && !props.disabled
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="number"
        inputMode="numeric"
        min={props.min}
        max={props.max}
        step={1}
        value={props.value}
        placeholder={props.disabled ? t('common.unlimited') : undefined}
        disabled={props.disabled}
        aria-invalid={showError}
        aria-describedby={`${props.id}-hint${showError ? ` ${props.id}-error` : ''}`}
        onInput={(e) => props.onInput((e.currentTarget as HTMLInputElement).value)}
      />
      <span id={`${props.id}-hint`} class="muted small">
        {props.hint}
      </span>
      {showError && (
        <span id={`${props.id}-error`} class="field-error">
          {t('send.rangeError', { min: props.min, max: props.max })}
        </span>
      )}
    </div>
  )
}

export function uploadMessage(err: unknown, name: string, site: SiteInfo): string {
  if (err instanceof ApiFailure && err.code === 'file_too_large')
    return t('send.tooLarge', { name, max: formatBytes(site.maxFileSizeBytes) })
  return `${name}: ${describeFailure(err)}`
}

export function shareMessage(err: unknown): string {
  return describeFailure(err)
}

/**
 * Leaving the page while bytes are in flight loses the upload (it can be resumed, but the person
 * may not know): the browser asks first. A ref, set where uploads start and end, so the question
 * stops the moment they do (an effect would follow a render later).
 */
export function useLeaveWarning() {
  const inFlight = useRef(false)
  useEffect(() => {
    const warn = (e: BeforeUnloadEvent) => {
      if (!inFlight.current) return
      e.preventDefault()
      e.returnValue = ''
    }
    addEventListener('beforeunload', warn)
    return () => removeEventListener('beforeunload', warn)
  }, [])
  return inFlight
}
