import { useEffect, useLayoutEffect, useState } from 'preact/hooks'
import { admin, ApiFailure, type Settings } from '../api.ts'
import { type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'
import { focusFirst, fromSizeField, SizeInput, type SizeUnit, toSizeField } from './parts.tsx'

type Group = 'limits' | 'guessing'

/**
 * The numeric settings in page order. `size: true` fields are byte counts the admin types in
 * MB or GB; `label` overrides the `settings.<key>` label. Add new settings here (and switches to
 * SWITCH_SETTINGS); validation, focus and the server's answers follow.
 */
export const NUMBER_SETTINGS: Array<{
  group: Group
  key: keyof Settings
  min: number
  max: number
  size?: true
  label?: Key
}> = [
  { group: 'limits', key: 'defaultExpireDays', min: 1, max: 3650 },
  { group: 'limits', key: 'maxExpireDays', min: 1, max: 3650 },
  { group: 'limits', key: 'defaultMaxDownloads', min: 1, max: 1_000_000 },
  { group: 'limits', key: 'maxDownloadsCap', min: 1, max: 1_000_000 },
  {
    group: 'limits',
    key: 'maxFileSizeBytes',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    size: true,
    label: 'settings.maxFileSize',
  },
  { group: 'limits', key: 'codeLength', min: 6, max: 12 },
  {
    group: 'limits',
    key: 'previewMaxBytes',
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    size: true,
    label: 'settings.previewMaxSize',
  },
  { group: 'guessing', key: 'takeFailuresPerIp', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'takeFailuresGlobal', min: 1, max: 100_000_000 },
  { group: 'guessing', key: 'takeFailureWindowSeconds', min: 1, max: 86_400 },
  { group: 'guessing', key: 'guessThrottlePerMinute', min: 1, max: 100_000 },
  { group: 'guessing', key: 'passwordFailuresPerIp', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'passwordFailuresPerShare', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'passwordFailureWindowSeconds', min: 1, max: 86_400 },
  { group: 'guessing', key: 'loginAttemptsPerIp', min: 1, max: 1000 },
  { group: 'guessing', key: 'loginWindowSeconds', min: 1, max: 86_400 },
  { group: 'guessing', key: 'loginFailuresPerAccount', min: 1, max: 100_000 },
  { group: 'guessing', key: 'loginFailuresGlobal', min: 1, max: 1_000_000 },
  { group: 'guessing', key: 'loginBackoffMaxSeconds', min: 1, max: 86_400 },
]

/** On/off settings, shown after the numbers of their group. */
export const SWITCH_SETTINGS: Array<{ group: Group; key: keyof Settings; label?: Key }> = [
  { group: 'limits', key: 'unlimitedEnabled' },
  { group: 'limits', key: 'previewEnabled' },
]

type NumberSetting = (typeof NUMBER_SETTINGS)[number]

const fieldId = (key: string) => `setting-${key}`
const labelOf = (f: { key: string; label?: Key }) => t(f.label ?? (`settings.${f.key}` as Key))

/** The message a person reads for a value outside its range. */
const rangeMessage = (f: NumberSetting) =>
  f.size ? t('settings.err.size') : t('settings.err.whole', { min: f.min, max: f.max })

export function SettingsPanel({ onFailure }: PanelProps) {
  const [values, setValues] = useState<Record<string, string> | null>(null)
  const [units, setUnits] = useState<Record<string, SizeUnit>>({})
  // The stored bytes behind each size as first shown: sent back as they were when left untouched
  // (a size that MB with decimals cannot say exactly is not changed by saving the form).
  const [shownSizes, setShownSizes] = useState<
    Record<string, { amount: string; unit: SizeUnit; bytes: number }>
  >({})
  const [switches, setSwitches] = useState<Record<string, boolean>>({})
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [busy, setBusy] = useState(false)
  const [focusTo, setFocusTo] = useState<string[] | null>(null)

  const load = (s: Settings) => {
    const v: Record<string, string> = {}
    const u: Record<string, SizeUnit> = {}
    const shown: Record<string, { amount: string; unit: SizeUnit; bytes: number }> = {}
    for (const f of NUMBER_SETTINGS) {
      const n = Number(s[f.key])
      if (f.size) {
        const field = toSizeField(n)
        v[f.key] = field.amount
        u[f.key] = field.unit
        shown[f.key] = { ...field, bytes: n }
      } else v[f.key] = String(n)
    }
    setValues(v)
    setUnits(u)
    setShownSizes(shown)
    setSwitches(Object.fromEntries(SWITCH_SETTINGS.map((f) => [f.key, Boolean(s[f.key])])))
  }
  useEffect(() => {
    admin
      .settings()
      .then(load)
      .catch((err) => setMessage({ kind: 'error', text: onFailure(err) }))
  }, [])
  // After the messages render: the first invalid field in page order gets the focus.
  useLayoutEffect(() => {
    if (focusTo) {
      focusFirst(focusTo.map(fieldId))
      setFocusTo(null)
    }
  }, [focusTo])
  if (!values)
    return message ? (
      <Alert kind="error">{message.text}</Alert>
    ) : (
      <p aria-busy="true">{t('common.loading')}</p>
    )

  const showErrors = (found: Record<string, string>) => {
    setErrors(found)
    setMessage({ kind: 'error', text: t('settings.invalid') })
    setFocusTo(Object.keys(found))
  }

  const submit = async (e: Event) => {
    e.preventDefault()
    setMessage(null)
    // Checked here first (range, whole numbers, the pairs), then by the server, which has the last word.
    const local: Record<string, string> = {}
    const patch: Record<string, number | boolean> = { ...switches }
    for (const f of NUMBER_SETTINGS) {
      const raw = values[f.key]!.trim()
      const unit = units[f.key] ?? 'MB'
      const untouched = shownSizes[f.key]
      const n = f.size
        ? untouched && untouched.amount === raw && untouched.unit === unit
          ? untouched.bytes
          : fromSizeField(raw, unit)
        : raw && /^\d+$/.test(raw)
          ? Number(raw)
          : null
      if (n === null || n < f.min || n > f.max) local[f.key] = rangeMessage(f)
      else patch[f.key] = n
    }
    const num = (k: keyof Settings) => patch[k] as number
    if (!local.defaultExpireDays && !local.maxExpireDays && num('defaultExpireDays') > num('maxExpireDays'))
      local.defaultExpireDays = t('settings.err.defaultExpire', { max: num('maxExpireDays') })
    if (
      !local.defaultMaxDownloads &&
      !local.maxDownloadsCap &&
      num('defaultMaxDownloads') > num('maxDownloadsCap')
    )
      local.defaultMaxDownloads = t('settings.err.defaultDownloads', { max: num('maxDownloadsCap') })
    if (Object.keys(local).length) return showErrors(local)
    setErrors({})
    setBusy(true)
    try {
      load(await admin.saveSettings(patch as Partial<Settings>))
      setMessage({ kind: 'ok', text: t('settings.saved') })
    } catch (err) {
      if (err instanceof ApiFailure && err.details.issues?.length) {
        // The server's words are for developers; the page says the same thing for people.
        const server: Record<string, string> = {}
        for (const i of err.details.issues) {
          const key = i.field.replace(/^body\./, '')
          const f = NUMBER_SETTINGS.find((x) => x.key === key)
          server[key] =
            key === 'defaultExpireDays' && /maxExpireDays/.test(i.message)
              ? t('settings.err.defaultExpire', { max: num('maxExpireDays') })
              : key === 'defaultMaxDownloads' && /maxDownloadsCap/.test(i.message)
                ? t('settings.err.defaultDownloads', { max: num('maxDownloadsCap') })
                : f
                  ? rangeMessage(f)
                  : i.message
        }
        showErrors(server)
      } else setMessage({ kind: 'error', text: onFailure(err) })
    } finally {
      setBusy(false)
    }
  }

  const field = (f: NumberSetting) => {
    const id = fieldId(f.key)
    const err = errors[f.key]
    if (f.size)
      return (
        <SizeInput
          key={f.key}
          id={id}
          label={labelOf(f)}
          amount={values[f.key]!}
          unit={units[f.key] ?? 'MB'}
          error={err}
          onChange={(amount, unit) => {
            setValues({ ...values, [f.key]: amount })
            setUnits({ ...units, [f.key]: unit })
          }}
        />
      )
    return (
      <div class="field" key={f.key}>
        <label for={id}>{labelOf(f)}</label>
        <input
          id={id}
          type="text"
          inputMode="numeric"
          autoComplete="off"
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

  const group = (g: Group) => (
    <fieldset class="grid">
      <legend>{t(`settings.${g}` as Key)}</legend>
      {NUMBER_SETTINGS.filter((f) => f.group === g).map(field)}
      {SWITCH_SETTINGS.filter((f) => f.group === g).map((f) => (
        <label class="check wide" key={f.key}>
          <input
            id={fieldId(f.key)}
            type="checkbox"
            checked={switches[f.key] ?? false}
            onChange={(e) =>
              setSwitches({ ...switches, [f.key]: (e.currentTarget as HTMLInputElement).checked })
            }
            data-testid={fieldId(f.key)}
          />
          {labelOf(f)}
        </label>
      ))}
    </fieldset>
  )

  return (
    <form class="card" onSubmit={submit} noValidate>
      {group('limits')}
      {group('guessing')}
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
