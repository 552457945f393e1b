import { useEffect, useState } from 'preact/hooks'
import { admin, ApiFailure, type Settings } from '../api.ts'
import { type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'

const NUMBER_SETTINGS: Array<{
  group: 'limits' | 'guessing'
  key: keyof Settings
  min: number
  max: number
}> = [
  { group: 'limits', key: 'defaultExpireDays', min: 1, max: 3650 },
  { group: 'limits', key: 'maxExpireDays', min: 1, max: 3650 },
  { group: 'limits', key: 'defaultMaxDownloads', min: 1, max: 1_000_000 },
  { group: 'limits', key: 'maxDownloadsCap', min: 1, max: 1_000_000 },
  { group: 'limits', key: 'maxFileSizeBytes', min: 1, max: Number.MAX_SAFE_INTEGER },
  { group: 'limits', key: 'codeLength', min: 6, max: 12 },
  { group: 'guessing', key: 'takeFailuresPerIp', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'takeFailuresGlobal', min: 1, max: 100_000_000 },
  { group: 'guessing', key: 'takeFailureWindowSeconds', min: 1, max: 86_400 },
  { group: 'guessing', key: 'guessThrottlePerMinute', min: 1, max: 100_000 },
  { group: 'guessing', key: 'loginAttemptsPerIp', min: 1, max: 1000 },
  { group: 'guessing', key: 'loginWindowSeconds', min: 1, max: 86_400 },
  { group: 'guessing', key: 'loginFailuresPerAccount', min: 1, max: 100_000 },
  { group: 'guessing', key: 'loginFailuresGlobal', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'loginBackoffMaxSeconds', min: 1, max: 86_400 },
]
export function SettingsPanel({ onFailure }: PanelProps) {
  const [values, setValues] = useState<Record<string, string> | null>(null)
  const [unlimited, setUnlimited] = useState(false)
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [busy, setBusy] = useState(false)

  const load = (s: Settings) => {
    setValues(Object.fromEntries(NUMBER_SETTINGS.map((f) => [f.key, String(s[f.key])])))
    setUnlimited(s.unlimitedEnabled)
  }
  useEffect(() => {
    admin
      .settings()
      .then(load)
      .catch((err) => setMessage({ kind: 'error', text: onFailure(err) }))
  }, [])
  if (!values)
    return message ? (
      <Alert kind="error">{message.text}</Alert>
    ) : (
      <p aria-busy="true">{t('common.loading')}</p>
    )

  const submit = async (e: Event) => {
    e.preventDefault()
    setMessage(null)
    // Checked here first (range, whole numbers, the pairs), then by the server, which has the last word.
    const local: Record<string, string> = {}
    const patch: Partial<Settings> = { unlimitedEnabled: unlimited }
    for (const f of NUMBER_SETTINGS) {
      const raw = values[f.key]!.trim()
      const n = Number(raw)
      if (!raw || !Number.isInteger(n) || n < f.min || n > f.max)
        local[f.key] = t('send.rangeError', { min: f.min, max: f.max })
      else (patch as Record<string, number>)[f.key] = n
    }
    if (!local.defaultExpireDays && !local.maxExpireDays && patch.defaultExpireDays! > patch.maxExpireDays!)
      local.defaultExpireDays = `≤ ${t('settings.maxExpireDays')} (${patch.maxExpireDays})`
    if (
      !local.defaultMaxDownloads &&
      !local.maxDownloadsCap &&
      patch.defaultMaxDownloads! > patch.maxDownloadsCap!
    )
      local.defaultMaxDownloads = `≤ ${t('settings.maxDownloadsCap')} (${patch.maxDownloadsCap})`
    setErrors(local)
    if (Object.keys(local).length) {
      setMessage({ kind: 'error', text: t('settings.invalid') })
      document.getElementById(`setting-${Object.keys(local)[0]}`)?.focus()
      return
    }
    setBusy(true)
    try {
      load(await admin.saveSettings(patch))
      setMessage({ kind: 'ok', text: t('settings.saved') })
    } catch (err) {
      if (err instanceof ApiFailure && err.details.issues?.length) {
        const server: Record<string, string> = {}
        for (const i of err.details.issues) server[i.field.replace(/^body\./, '')] = i.message
        setErrors(server)
        setMessage({ kind: 'error', text: t('settings.invalid') })
      } else setMessage({ kind: 'error', text: onFailure(err) })
    } finally {
      setBusy(false)
    }
  }

  const field = (f: (typeof NUMBER_SETTINGS)[number]) => {
    const id = `setting-${f.key}`
    const err = errors[f.key]
    return (
      <div class="field" key={f.key}>
        <label for={id}>{t(`settings.${f.key}` as Key)}</label>
        <input
          id={id}
          type="number"
          inputMode="numeric"
          min={f.min}
          max={f.max}
          step={1}
          value={values[f.key]}
          aria-invalid={err ? true : undefined}
          aria-describedby={err ? `${id}-error` : undefined}
          onInput={(e) => setValues({ ...values, [f.key]: (e.currentTarget as HTMLInputElement).value })}
          data-testid={id}
        />
        {err && (
          <span id={`${id}-error`} class="field-error" data-testid={`${id}-error`}>
            {err}
          </span>
        )}
      </div>
    )
  }

  return (
    <form class="card" onSubmit={submit} noValidate>
      <fieldset class="grid">
        <legend>{t('settings.limits')}</legend>
        {NUMBER_SETTINGS.filter((f) => f.group === 'limits').map(field)}
        <label class="check wide">
          <input
            type="checkbox"
            checked={unlimited}
            onChange={(e) => setUnlimited((e.currentTarget as HTMLInputElement).checked)}
            data-testid="setting-unlimitedEnabled"
          />
          {t('settings.unlimitedEnabled')}
        </label>
      </fieldset>
      <fieldset class="grid">
        <legend>{t('settings.guessing')}</legend>
        {NUMBER_SETTINGS.filter((f) => f.group === 'guessing').map(field)}
      </fieldset>
      {message && (
        <Alert kind={message.kind} testId="settings-message">
          {message.text}
        </Alert>
      )}
      <div class="actions">
        <button type="submit" disabled={busy} data-testid="save-settings">
          {t('settings.save')}
        </button>
      </div>
    </form>
  )
}
