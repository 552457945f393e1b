import { useEffect, useLayoutEffect, useState } from 'preact/hooks'
import {
  admin,
  ApiFailure,
  type ConnectionTest,
  type StoreInput,
  type StoreInstance,
  type StoreKind,
} from '../api.ts'
import { formatBytes, formatPercent, type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'
import { focusFirst, fromSizeField, SizeInput, type SizeUnit, toSizeField } from './parts.tsx'

const KINDS: StoreKind[] = ['blob', 'bucket', 'repo']
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
const HTTP_URL = /^https?:\/\/[^\s/]+/

type Message = { kind: 'ok' | 'error'; text: string }

/** A connection test's outcome as a sentence in the page's language (the server's words only for the unforeseen). */
function describeTest(r: ConnectionTest): Message {
  if (r.ok) {
    const note = r.noteCode ? t(`stores.note.${r.noteCode}` as Key) : r.note
    return {
      kind: 'ok',
      text: note ? t('stores.testOkNote', { ms: r.ms, note }) : t('stores.testOk', { ms: r.ms }),
    }
  }
  const reason = r.reason && r.reason !== 'other' ? t(`stores.reason.${r.reason}` as Key) : (r.message ?? '')
  return {
    kind: 'error',
    text: t('stores.testFailed', { step: t(`stores.step.${r.step ?? 'connect'}` as Key), message: reason }),
  }
}

export function StoresPanel({ onFailure }: PanelProps) {
  const [stores, setStores] = useState<StoreInstance[] | null>(null)
  const [loadError, setLoadError] = useState<string | null>(null)
  const [message, setMessage] = useState<Message | null>(null)
  const [editing, setEditing] = useState<string | null>(null)
  const [version, setVersion] = useState(0)

  useEffect(() => {
    admin
      .stores()
      .then(setStores)
      .catch((err) => {
        if (err instanceof ApiFailure && err.status === 404) setLoadError(t('stores.unavailable'))
        else setLoadError(onFailure(err))
      })
  }, [version])
  const reload = (m: Message | null) => {
    setMessage(m)
    setEditing(null)
    setVersion((v) => v + 1)
  }

  const remove = async (s: StoreInstance) => {
    if (!confirm(t('stores.confirmDelete', { name: s.name }))) return
    try {
      await admin.deleteStore(s.name)
      reload({ kind: 'ok', text: t('stores.deleted', { name: s.name }) })
    } catch (err) {
      if (err instanceof ApiFailure && err.code === 'store_in_use')
        setMessage({
          kind: 'error',
          text: t('stores.inUse', { name: s.name, count: Number(err.details.shares ?? 1) }),
        })
      else setMessage({ kind: 'error', text: onFailure(err) })
    }
  }

  if (loadError) return <p class="muted">{loadError}</p>
  if (!stores) return <p aria-busy="true">{t('common.loading')}</p>
  return (
    <>
      {message && (
        <Alert kind={message.kind} testId="stores-message">
          {message.text}
        </Alert>
      )}
      {stores.length === 0 ? (
        <p class="muted">{t('stores.empty')}</p>
      ) : (
        <ul class="stores" data-testid="stores">
          {stores.map((s) => (
            <StoreCard
              key={s.id}
              store={s}
              editing={editing === s.name}
              onEdit={() => {
                setMessage(null)
                setEditing(s.name)
              }}
              onCancel={() => setEditing(null)}
              onSaved={() => reload({ kind: 'ok', text: t('stores.saved', { name: s.name }) })}
              onDelete={() => void remove(s)}
              onFailure={onFailure}
            />
          ))}
        </ul>
      )}
      <StoreForm
        key={`new-${version}`}
        onSaved={(name) => reload({ kind: 'ok', text: t('stores.created', { name }) })}
        onFailure={onFailure}
      />
    </>
  )
}

function StoreCard({
  store: s,
  editing,
  onEdit,
  onCancel,
  onSaved,
  onDelete,
  onFailure,
}: {
  store: StoreInstance
  editing: boolean
  onEdit: () => void
  onCancel: () => void
  onSaved: () => void
  onDelete: () => void
  onFailure: (err: unknown) => string
}) {
  const [test, setTest] = useState<Message | null>(null)
  const [testing, setTesting] = useState(false)
  // A result belongs to the settings it was tested with: gone once the instance is edited.
  useEffect(() => {
    if (editing) setTest(null)
  }, [editing])
  const id = `store-${s.id}`
  const taken = s.usedBytes + s.reservedBytes
  const runTest = async () => {
    setTesting(true)
    setTest(null)
    try {
      setTest(describeTest(await admin.testStore({ name: s.name })))
    } catch (err) {
      setTest({ kind: 'error', text: onFailure(err) })
    } finally {
      setTesting(false)
    }
  }
  const where = [s.settings.endpoint, s.settings.bucket, s.settings.remoteUrl, s.settings.branch]
    .filter((v) => typeof v === 'string' && v)
    .join(' · ')
  return (
    <li class="card store-card" data-testid={`store-card-${s.name}`}>
      <p class="store-head">
        <strong id={id}>{s.name}</strong> <span class="badge">{t(`store.${s.kind}` as Key)}</span>
        {s.builtin && <span class="badge">{t('stores.builtin')}</span>}
        {!s.enabled && <span class="badge revoked">{t('stores.disabled')}</span>}
        {!s.available && <span class="badge revoked">{t('stores.unusable')}</span>}
      </p>
      {s.quotaBytes ? (
        <meter
          min={0}
          max={s.quotaBytes}
          value={Math.min(taken, s.quotaBytes)}
          high={s.quotaBytes * 0.8}
          optimum={0}
          aria-labelledby={id}
          aria-describedby={`${id}-usage`}
        />
      ) : null}
      <p id={`${id}-usage`} class="small" data-testid={`store-usage-${s.name}`}>
        {s.quotaBytes
          ? t('stores.usage', {
              used: formatBytes(s.usedBytes),
              quota: formatBytes(s.quotaBytes),
              percent: formatPercent(taken, s.quotaBytes),
            })
          : t('stores.usageNoQuota', { used: formatBytes(s.usedBytes) })}
        {s.reservedBytes > 0 && <> · {t('stores.reserved', { reserved: formatBytes(s.reservedBytes) })}</>}
      </p>
      {where && <p class="small muted store-where">{where}</p>}
      {s.credentialsSet.length > 0 && (
        <p class="small muted">
          {t('stores.credentials', {
            names: s.credentialsSet
              .map((k) => (SECRETS.includes(k) ? t(`stores.${k}` as Key) : k))
              .join(', '),
          })}
        </p>
      )}
      {editing ? (
        <StoreForm store={s} onSaved={onSaved} onCancel={onCancel} onFailure={onFailure} />
      ) : (
        <div class="store-actions">
          <button
            type="button"
            class="secondary small"
            aria-label={t('stores.testLabel', { name: s.name })}
            disabled={testing}
            onClick={() => void runTest()}
          >
            {testing ? t('stores.testing') : t('stores.test')}
          </button>
          <button
            type="button"
            class="secondary small"
            aria-label={t('stores.editLabel', { name: s.name })}
            onClick={onEdit}
          >
            {t('stores.edit')}
          </button>
          {!s.builtin && (
            <button
              type="button"
              class="danger small"
              aria-label={t('stores.deleteLabel', { name: s.name })}
              onClick={onDelete}
            >
              {t('stores.delete')}
            </button>
          )}
        </div>
      )}
      {test && !editing && (
        <Alert kind={test.kind} testId={`store-test-${s.name}`}>
          {test.text}
        </Alert>
      )}
    </li>
  )
}

/** Whether the form's connection settings differ from the stored ones (a typed secret always does). */
function settingsChanged(next: Record<string, unknown>, store: StoreInstance): boolean {
  // A setting left out means its default: the same as the form's default value.
  const withDefault = (k: string, v: unknown) =>
    v !== undefined ? v : k in DEFAULTS ? DEFAULTS[k] : k === 'pathStyle' || k === 'postPolicy' ? true : v
  const keys = new Set([...Object.keys(next), ...Object.keys(store.settings)])
  for (const k of keys) {
    if (SECRETS.includes(k)) {
      if (next[k] !== undefined) return true
    } else if (LISTS.includes(k)) {
      if (JSON.stringify(next[k] ?? []) !== JSON.stringify(store.settings[k] ?? [])) return true
    } else if (withDefault(k, next[k]) !== withDefault(k, store.settings[k])) return true
  }
  return false
}
const SECRETS = ['token', 'accessKey', 'secretKey']
/** Settings that are lists, entered as comma-separated text. */
const LISTS = ['mirrors']

/** Text fields of the connection settings, per kind (the checkboxes are handled apart). */
const TEXT_FIELDS: Record<StoreKind, Array<{ key: string; label: Key; hint?: Key; secret?: true }>> = {
  blob: [],
  bucket: [
    { key: 'endpoint', label: 'stores.endpoint', hint: 'stores.endpointHint' },
    { key: 'bucket', label: 'stores.bucket' },
    { key: 'region', label: 'stores.region' },
    { key: 'accessKey', label: 'stores.accessKey', secret: true },
    { key: 'secretKey', label: 'stores.secretKey', secret: true },
  ],
  repo: [
    { key: 'remoteUrl', label: 'stores.remoteUrl', hint: 'stores.remoteUrlHint' },
    { key: 'branch', label: 'stores.branch' },
    { key: 'username', label: 'stores.username', hint: 'stores.usernameHint' },
    { key: 'token', label: 'stores.token', secret: true },
    { key: 'owner', label: 'stores.owner' },
    { key: 'repo', label: 'stores.repo', hint: 'stores.mirrorsHint' },
    { key: 'mirrors', label: 'stores.mirrors', hint: 'stores.mirrorsListHint' },
  ],
}
const DEFAULTS: Record<string, string> = { region: 'us-east-1', branch: 'main', username: 'x-access-token' }

/** Adds an instance (no `store`) or edits one: quota and enabled always, connection settings unless built in. */
function StoreForm({
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
