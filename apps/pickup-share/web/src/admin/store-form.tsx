import { useLayoutEffect, useState } from 'preact/hooks'
import { admin, ApiFailure, type StoreInput, type StoreInstance, type StoreKind } from '../api.ts'
import { type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import { focusFirst, fromSizeField, SizeInput, type SizeUnit, toSizeField } from './parts.tsx'
import {
  DEFAULTS,
  describeTest,
  HTTP_URL,
  KINDS,
  LISTS,
  type Message,
  NAME,
  settingsChanged,
  TEXT_FIELDS,
} from './store-settings.ts'

/** Adds an instance (no `store`) or edits one: quota and enabled always, connection settings unless built in. */
export function StoreForm({
  store,
  onSaved,
  onCancel,
  onFailure,
}: {
  store?: StoreInstance
  onSaved: (name: string) => void
  onCancel?: () => void
  onFailure: (err: unknown) => string
}) {
  const creating = !store
  const prefix = creating ? 'new-store' : `edit-${store.name}`
  const fid = (key: string) => `${prefix}-${key}`
  const [name, setName] = useState('')
  const [kind, setKind] = useState<StoreKind>((store?.kind as StoreKind | undefined) ?? 'blob')
  const [text, setText] = useState<Record<string, string>>(() => {
    const v: Record<string, string> = {}
    for (const k of KINDS)
      for (const f of TEXT_FIELDS[k]) {
        const stored = store?.settings[f.key]
        v[f.key] = Array.isArray(stored)
          ? stored.join(', ')
          : typeof stored === 'string'
            ? stored
            : f.secret
              ? ''
              : (DEFAULTS[f.key] ?? '')
      }
    return v
  })
  const [pathStyle, setPathStyle] = useState(store?.settings.pathStyle !== false)
  const [postPolicy, setPostPolicy] = useState(store?.settings.postPolicy !== false)
  const initialQuota = toSizeField(store?.quotaBytes ?? 10 * 1024 ** 3)
  const [noQuota, setNoQuota] = useState(store ? store.quotaBytes === null : true)
  const [quota, setQuota] = useState<{ amount: string; unit: SizeUnit }>(initialQuota)
  const [enabled, setEnabled] = useState(store?.enabled ?? true)
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [message, setMessage] = useState<Message | null>(null)
  const [test, setTest] = useState<Message | null>(null)
  const [busy, setBusy] = useState(false)
  const [focusTo, setFocusTo] = useState<string[] | null>(null)
  useLayoutEffect(() => {
    if (focusTo) {
      focusFirst(focusTo.map(fid))
      setFocusTo(null)
    }
  }, [focusTo])

  const editsSettings = creating || !store.builtin
  const storedSecret = (key: string) => store?.credentialsSet.includes(key) ?? false

  /** The connection settings as the API takes them (empty secrets left out: kept when editing). */
  const settings = (): Record<string, unknown> => {
    const out: Record<string, unknown> = {}
    for (const f of TEXT_FIELDS[kind]) {
      const v = text[f.key]!.trim()
      if (v) out[f.key] = LISTS.includes(f.key) ? v.split(/[\s,]+/).filter(Boolean) : v
    }
    if (kind === 'bucket') Object.assign(out, { pathStyle, postPolicy })
    return out
  }

  const check = (forTest: boolean): Record<string, string> => {
    const found: Record<string, string> = {}
    if (creating && !forTest && !NAME.test(name)) found.name = t('stores.err.name')
    if (editsSettings) {
      const v = (k: string) => text[k]!.trim()
      if (kind === 'bucket') {
        if (!HTTP_URL.test(v('endpoint'))) found.endpoint = t('stores.err.url')
        if (v('bucket').length < 3 || v('bucket').length > 63) found.bucket = t('stores.err.bucket')
        for (const k of ['accessKey', 'secretKey'])
          if (!v(k) && !storedSecret(k)) found[k] = t('stores.err.required')
      }
      if (kind === 'repo' && !HTTP_URL.test(v('remoteUrl'))) found.remoteUrl = t('stores.err.url')
    }
    if (!forTest && !noQuota && fromSizeField(quota.amount, quota.unit) === null)
      found.quota = t('settings.err.size')
    return found
  }
  const invalid = (found: Record<string, string>) => {
    setErrors(found)
    setMessage({ kind: 'error', text: t('stores.err.form') })
    setFocusTo(Object.keys(found))
  }

  const runTest = async () => {
    setTest(null)
    setMessage(null)
    const found = check(true)
    if (Object.keys(found).length) return invalid(found)
    setErrors({})
    setBusy(true)
    try {
      const body = creating
        ? { kind, settings: settings() }
        : store.builtin
          ? { name: store.name }
          : { name: store.name, settings: settings() }
      setTest(describeTest(await admin.testStore(body)))
    } catch (err) {
      setTest({ kind: 'error', text: serverMessage(err) })
    } finally {
      setBusy(false)
    }
  }

  const serverMessage = (err: unknown): string =>
    err instanceof ApiFailure && err.code === 'bad_request'
      ? t('stores.err.settings', { message: err.message.replace(/^body\.settings: /, '') })
      : onFailure(err)

  const submit = async (e: Event) => {
    e.preventDefault()
    setMessage(null)
    const found = check(false)
    if (Object.keys(found).length) return invalid(found)
    setErrors({})
    const quotaBytes = noQuota ? null : fromSizeField(quota.amount, quota.unit)
    const input: StoreInput = { name: creating ? name : store.name }
    // An edit sends only what changed, so the audit log says what really changed.
    if (creating || quotaBytes !== store.quotaBytes) input.quotaBytes = quotaBytes
    if (creating || enabled !== store.enabled) input.enabled = enabled
    if (creating) input.kind = kind
    if (editsSettings && (creating || settingsChanged(settings(), store))) input.settings = settings()
    setBusy(true)
    try {
      await admin.saveStore(input)
      onSaved(input.name)
    } catch (err) {
      if (err instanceof ApiFailure && err.code === 'store_exists') {
        setErrors({ name: t('stores.exists', { name }) })
        setFocusTo(['name'])
        setMessage({ kind: 'error', text: t('stores.err.form') })
      } else setMessage({ kind: 'error', text: serverMessage(err) })
    } finally {
      setBusy(false)
    }
  }

  const errorOf = (key: string) =>
    errors[key] ? (
      <span id={`${fid(key)}-error`} class="field-error" data-testid={`${fid(key)}-error`}>
        {errors[key]}
      </span>
    ) : null
  const describedBy = (key: string, hint?: boolean) =>
    [hint ? `${fid(key)}-hint` : '', errors[key] ? `${fid(key)}-error` : ''].filter(Boolean).join(' ') ||
    undefined

  const textField = (f: (typeof TEXT_FIELDS)[StoreKind][number]) => (
    <div class="field" key={f.key}>
      <label for={fid(f.key)}>{t(f.label)}</label>
      <input
        id={fid(f.key)}
        // One object per type: Preact's types allow each input type its own ARIA roles.
        {...(f.secret ? { type: 'password' as const } : { type: 'text' as const })}
        autoComplete={f.secret ? 'new-password' : 'off'}
        spellcheck={false}
        value={text[f.key]}
        placeholder={f.secret && storedSecret(f.key) ? t('stores.keepSecret') : undefined}
        aria-invalid={errors[f.key] ? true : undefined}
        aria-describedby={describedBy(f.key, Boolean(f.hint))}
        onInput={(e) => setText({ ...text, [f.key]: (e.currentTarget as HTMLInputElement).value })}
        data-testid={fid(f.key)}
      />
      {f.hint && (
        <span id={`${fid(f.key)}-hint`} class="hint small muted">
          {t(f.hint)}
        </span>
      )}
      {errorOf(f.key)}
    </div>
  )

  const titleId = `${prefix}-title`
  return (
    <form
      class={creating ? 'card store-form' : 'store-form'}
      onSubmit={submit}
      noValidate
      aria-labelledby={titleId}
      data-testid={`${prefix}-form`}
    >
      {creating ? (
        <h2 id={titleId}>{t('stores.add')}</h2>
      ) : (
        <h2 id={titleId} class="store-edit-title">
          {t('stores.editTitle', { name: store.name })}
        </h2>
      )}
      {!editsSettings && <p class="small muted">{t('stores.builtinNote')}</p>}
      <div class="grid">
        {creating && (
          <div class="field">
            <label for={fid('name')}>{t('stores.name')}</label>
            <input
              id={fid('name')}
              type="text"
              autoComplete="off"
              spellcheck={false}
              value={name}
              aria-invalid={errors.name ? true : undefined}
              aria-describedby={describedBy('name', true)}
              onInput={(e) => setName((e.currentTarget as HTMLInputElement).value)}
              data-testid={fid('name')}
            />
            <span id={`${fid('name')}-hint`} class="hint small muted">
              {t('stores.nameHint')}
            </span>
            {errorOf('name')}
          </div>
        )}
        {creating && (
          <div class="field">
            <label for={fid('kind')}>{t('stores.kind')}</label>
            <select
              id={fid('kind')}
              value={kind}
              onChange={(e) => {
                setKind((e.currentTarget as HTMLSelectElement).value as StoreKind)
                setTest(null)
              }}
              data-testid={fid('kind')}
            >
              {KINDS.map((k) => (
                <option key={k} value={k}>
                  {t(`stores.kind.${k}` as Key)}
                </option>
              ))}
            </select>
          </div>
        )}
        {editsSettings && TEXT_FIELDS[kind].map(textField)}
        {editsSettings && kind === 'bucket' && (
          <>
            <label class="check wide">
              <input
                type="checkbox"
                checked={pathStyle}
                onChange={(e) => setPathStyle((e.currentTarget as HTMLInputElement).checked)}
              />
              {t('stores.pathStyle')}
            </label>
            <label class="check wide">
              <input
                type="checkbox"
                checked={postPolicy}
                onChange={(e) => setPostPolicy((e.currentTarget as HTMLInputElement).checked)}
              />
              {t('stores.postPolicy')}
            </label>
          </>
        )}
        {editsSettings && kind === 'blob' && <p class="small muted wide">{t('stores.blobHint')}</p>}
        <SizeInput
          id={fid('quota')}
          label={t('stores.quota')}
          amount={quota.amount}
          unit={quota.unit}
          disabled={noQuota}
          error={errors.quota}
          onChange={(amount, unit) => setQuota({ amount, unit })}
        />
        <label class="check">
          <input
            type="checkbox"
            checked={noQuota}
            onChange={(e) => setNoQuota((e.currentTarget as HTMLInputElement).checked)}
            data-testid={fid('no-quota')}
          />
          {t('stores.noQuota')}
        </label>
        <label class="check wide">
          <input
            type="checkbox"
            checked={enabled}
            onChange={(e) => setEnabled((e.currentTarget as HTMLInputElement).checked)}
            data-testid={fid('enabled')}
          />
          {t('stores.enabled')}
        </label>
      </div>
      {test && (
        <Alert kind={test.kind} testId={`${prefix}-test-result`}>
          {test.text}
        </Alert>
      )}
      {message && (
        <Alert kind={message.kind} testId={`${prefix}-message`}>
          {message.text}
        </Alert>
      )}
      <div class="actions">
        <button
          type="button"
          class="secondary"
          disabled={busy}
          onClick={() => void runTest()}
          data-testid={fid('test')}
        >
          {t('stores.test')}
        </button>
        <button type="submit" disabled={busy} data-testid={fid('save')}>
          {creating ? t('stores.create') : t('stores.save')}
        </button>
        {onCancel && (
          <button type="button" class="secondary" onClick={onCancel}>
            {t('stores.cancel')}
          </button>
        )}
      </div>
    </form>
  )
}
