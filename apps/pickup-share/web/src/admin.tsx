import { useEffect, useRef, useState } from 'preact/hooks'
import {
  admin,
  type AdminShare,
  ApiFailure,
  type AuditEntry,
  type AuthCodeRecord,
  type Settings,
  type StoreInstance,
} from './api.ts'
import { formatBytes, formatDate, formatPercent, formatWait, type Key, t } from './i18n.ts'
import { Alert, CopyButton, describeFailure } from './ui.tsx'
import { TextBadge } from './text-share.tsx'

type Tab = 'shares' | 'settings' | 'codes' | 'stores' | 'audit'
const TABS: Tab[] = ['shares', 'settings', 'codes', 'stores', 'audit']

/** Session state: unknown until the first admin request answers. */
export function AdminPage() {
  const [state, setState] = useState<'checking' | 'out' | 'in'>('checking')
  const [notice, setNotice] = useState<string | null>(null)
  const [tab, setTab] = useState<Tab>('shares')

  useEffect(() => {
    admin
      .settings()
      .then(() => setState('in'))
      .catch(() => setState('out'))
  }, [])

  /** Any 401 from a section means the session ended: back to the login form. */
  const onFailure = (err: unknown): string => {
    if (err instanceof ApiFailure && err.code === 'session_required') {
      setNotice(t('admin.sessionEnded'))
      setState('out')
    }
    return describeFailure(err)
  }

  if (state === 'checking') return <p aria-busy="true">{t('common.loading')}</p>
  if (state === 'out')
    return (
      <Login
        notice={notice}
        onIn={() => {
          setNotice(null)
          setState('in')
        }}
      />
    )

  const tabs = TABS.map((id) => ({ id, label: t(`admin.tab.${id}` as Key) }))
  return (
    <section aria-labelledby="admin-title">
      <div class="admin-head">
        <h1 id="admin-title">{t('admin.title')}</h1>
        <button
          type="button"
          class="secondary"
          onClick={() => {
            void admin.logout().finally(() => setState('out'))
          }}
        >
          {t('admin.logout')}
        </button>
      </div>
      <Tabs tabs={tabs} current={tab} onSelect={setTab} />
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} class="panel">
        {tab === 'shares' && <SharesPanel onFailure={onFailure} />}
        {tab === 'settings' && <SettingsPanel onFailure={onFailure} />}
        {tab === 'codes' && <CodesPanel onFailure={onFailure} />}
        {tab === 'stores' && <StoresPanel onFailure={onFailure} />}
        {tab === 'audit' && <AuditPanel onFailure={onFailure} />}
      </div>
    </section>
  )
}

/** WAI-ARIA tabs: arrow keys, Home and End move between tabs; Tab goes into the panel. */
function Tabs({
  tabs,
  current,
  onSelect,
}: {
  tabs: Array<{ id: Tab; label: string }>
  current: Tab
  onSelect: (t: Tab) => void
}) {
  const refs = useRef<Record<string, HTMLButtonElement | null>>({})
  const move = (e: KeyboardEvent) => {
    const i = tabs.findIndex((x) => x.id === current)
    const next =
      e.key === 'ArrowRight'
        ? (i + 1) % tabs.length
        : e.key === 'ArrowLeft'
          ? (i - 1 + tabs.length) % tabs.length
          : e.key === 'Home'
            ? 0
            : e.key === 'End'
              ? tabs.length - 1
              : -1
    if (next < 0) return
    e.preventDefault()
    const id = tabs[next]!.id
    onSelect(id)
    refs.current[id]?.focus()
  }
  return (
    <div role="tablist" aria-label={t('admin.tabs')} class="tabs" onKeyDown={move}>
      {tabs.map((x) => (
        <button
          key={x.id}
          ref={(el) => {
            refs.current[x.id] = el
          }}
          type="button"
          role="tab"
          id={`tab-${x.id}`}
          aria-selected={x.id === current}
          aria-controls={`panel-${x.id}`}
          tabIndex={x.id === current ? 0 : -1}
          onClick={() => onSelect(x.id)}
          data-testid={`tab-${x.id}`}
        >
          {x.label}
        </button>
      ))}
    </div>
  )
}

function Login({ notice, onIn }: { notice: string | null; onIn: () => void }) {
  const [password, setPassword] = useState('')
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await admin.login(password)
      onIn()
    } catch (err) {
      if (err instanceof ApiFailure && err.code === 'invalid_password') setError(t('admin.wrongPassword'))
      else if (err instanceof ApiFailure && err.code === 'admin_disabled') setError(t('admin.disabled'))
      else if (err instanceof ApiFailure && err.code === 'rate_limit_exceeded')
        setError(t('admin.tooMany', { wait: formatWait(err.retryAfter ?? 60) }))
      else setError(describeFailure(err))
    } finally {
      setBusy(false)
    }
  }
  return (
    <section aria-labelledby="login-title" class="narrow">
      <h1 id="login-title">{t('admin.login')}</h1>
      {notice && <Alert kind="info">{notice}</Alert>}
      <form class="card" onSubmit={submit}>
        <div class="field">
          <label for="password">{t('admin.password')}</label>
          <input
            id="password"
            type="password"
            autoComplete="current-password"
            required
            value={password}
            aria-invalid={error ? true : undefined}
            aria-describedby={error ? 'login-error' : undefined}
            onInput={(e) => setPassword((e.currentTarget as HTMLInputElement).value)}
            data-testid="password"
          />
        </div>
        {error && (
          <p id="login-error" class="alert error" role="alert">
            {error}
          </p>
        )}
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="login">
            {busy ? t('admin.loggingIn') : t('admin.login')}
          </button>
        </div>
      </form>
    </section>
  )
}

type PanelProps = { onFailure: (err: unknown) => string }

function SharesPanel({ onFailure }: PanelProps) {
  const [q, setQ] = useState('')
  const [status, setStatus] = useState('')
  const [page, setPage] = useState(1)
  const [data, setData] = useState<{ items: AdminShare[]; total: number; pageSize: number } | null>(null)
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [version, setVersion] = useState(0)

  useEffect(() => {
    const query: Record<string, string> = { page: String(page), pageSize: '20' }
    if (q.trim()) query.q = q.trim()
    if (status) query.status = status
    let live = true
    const timer = setTimeout(() => {
      admin
        .shares(query)
        .then((d) => live && setData(d))
        .catch((err) => live && setMessage({ kind: 'error', text: onFailure(err) }))
    }, 150)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [q, status, page, version])

  const remove = async (code: string) => {
    if (!confirm(t('shares.confirmDelete', { code }))) return
    try {
      await admin.deleteShare(code)
      setMessage({ kind: 'ok', text: t('shares.deleted', { code }) })
      setVersion((v) => v + 1)
    } catch (err) {
      setMessage({ kind: 'error', text: onFailure(err) })
    }
  }
  const cleanup = async () => {
    setMessage(null)
    try {
      const r = await admin.cleanup()
      setMessage({
        kind: 'ok',
        text: t('shares.cleanupResult', {
          files: r.removedFiles,
          size: formatBytes(r.freedBytes),
          partials: r.partialFiles,
          partialSize: formatBytes(r.partialBytes),
        }),
      })
      setVersion((v) => v + 1)
    } catch (err) {
      setMessage({ kind: 'error', text: onFailure(err) })
    }
  }
  const pages = data ? Math.max(1, Math.ceil(data.total / data.pageSize)) : 1

  return (
    <>
      <div class="toolbar">
        <div class="field">
          <label for="share-search">{t('shares.search')}</label>
          <input
            id="share-search"
            type="search"
            value={q}
            onInput={(e) => {
              setQ((e.currentTarget as HTMLInputElement).value)
              setPage(1)
            }}
            data-testid="share-search"
          />
        </div>
        <div class="field">
          <label for="share-status">{t('shares.status')}</label>
          <select
            id="share-status"
            value={status}
            onChange={(e) => {
              setStatus((e.currentTarget as HTMLSelectElement).value)
              setPage(1)
            }}
          >
            <option value="">{t('shares.status.all')}</option>
            <option value="active">{t('shares.status.active')}</option>
            <option value="exhausted">{t('shares.status.exhausted')}</option>
            <option value="expired">{t('shares.status.expired')}</option>
          </select>
        </div>
        <div class="toolbar-actions">
          <button type="button" class="secondary" onClick={() => setVersion((v) => v + 1)}>
            {t('shares.refresh')}
          </button>
          <button type="button" class="secondary" onClick={cleanup} data-testid="cleanup">
            {t('shares.cleanup')}
          </button>
        </div>
      </div>
      {message && (
        <Alert kind={message.kind} testId="shares-message">
          {message.text}
        </Alert>
      )}
      {!data ? (
        <p aria-busy="true">{t('common.loading')}</p>
      ) : data.items.length === 0 ? (
        <p class="muted">{t('shares.empty')}</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-labelledby="tab-shares">
          <table data-testid="shares-table">
            <thead>
              <tr>
                <th scope="col">{t('shares.code')}</th>
                <th scope="col">{t('shares.files')}</th>
                <th scope="col">{t('shares.size')}</th>
                <th scope="col">{t('shares.created')}</th>
                <th scope="col">{t('shares.expires')}</th>
                <th scope="col">{t('shares.downloads')}</th>
                <th scope="col">
                  <span class="visually-hidden">{t('shares.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((s) => (
                <tr key={s.code}>
                  <td class="mono">
                    {s.code}
                    <TextBadge files={s.files} />
                  </td>
                  <td class="names">{s.files.map((f) => f.name).join(', ')}</td>
                  <td>{formatBytes(s.totalBytes)}</td>
                  <td>{formatDate(s.createdAt)}</td>
                  <td>{formatDate(s.expiresAt)}</td>
                  <td>
                    {s.maxDownloads === null
                      ? t('common.unlimited')
                      : `${s.remaining ?? 0} / ${s.maxDownloads}`}
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger small"
                      aria-label={t('shares.deleteLabel', { code: s.code })}
                      onClick={() => void remove(s.code)}
                    >
                      {t('shares.delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {data && data.total > data.pageSize && (
        <div class="pager">
          <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            {t('shares.prev')}
          </button>
          <span>{t('shares.page', { page, pages, total: data.total })}</span>
          <button type="button" class="secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            {t('shares.next')}
          </button>
        </div>
      )}
    </>
  )
}

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
  { group: 'limits', key: 'previewMaxBytes', min: 1, max: Number.MAX_SAFE_INTEGER },
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

function SettingsPanel({ onFailure }: PanelProps) {
  const [values, setValues] = useState<Record<string, string> | null>(null)
  const [unlimited, setUnlimited] = useState(false)
  const [previewEnabled, setPreviewEnabled] = useState(true)
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [busy, setBusy] = useState(false)

  const load = (s: Settings) => {
    setValues(Object.fromEntries(NUMBER_SETTINGS.map((f) => [f.key, String(s[f.key])])))
    setUnlimited(s.unlimitedEnabled)
    setPreviewEnabled(s.previewEnabled)
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
    const patch: Partial<Settings> = { unlimitedEnabled: unlimited, previewEnabled }
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
        <label class="check wide">
          <input
            type="checkbox"
            checked={previewEnabled}
            onChange={(e) => setPreviewEnabled((e.currentTarget as HTMLInputElement).checked)}
            data-testid="setting-previewEnabled"
          />
          {t('settings.previewEnabled')}
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

function CodesPanel({ onFailure }: PanelProps) {
  const [items, setItems] = useState<AuthCodeRecord[] | null>(null)
  const [scope, setScope] = useState('both')
  const [hours, setHours] = useState('24')
  const [note, setNote] = useState('')
  const [created, setCreated] = useState<string | null>(null)
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [hoursError, setHoursError] = useState<string | null>(null)
  const [version, setVersion] = useState(0)

  useEffect(() => {
    admin
      .authCodes()
      .then((r) => setItems(r.items))
      .catch((err) => setMessage({ kind: 'error', text: onFailure(err) }))
  }, [version])

  const create = async (e: Event) => {
    e.preventDefault()
    setMessage(null)
    const n = Number(hours)
    if (!Number.isInteger(n) || n < 1 || n > 8760) {
      setHoursError(t('send.rangeError', { min: 1, max: 8760 }))
      return
    }
    setHoursError(null)
    try {
      const r = await admin.createAuthCode({
        scope,
        expiresInHours: n,
        ...(note.trim() ? { note: note.trim() } : {}),
      })
      setCreated(r.code)
      setNote('')
      setVersion((v) => v + 1)
    } catch (err) {
      setMessage({ kind: 'error', text: onFailure(err) })
    }
  }
  const revoke = async (r: AuthCodeRecord) => {
    if (!confirm(t('codes.confirmRevoke', { hint: r.hint }))) return
    try {
      await admin.revokeAuthCode(r.id)
      setMessage({ kind: 'ok', text: t('codes.revoked') })
      setVersion((v) => v + 1)
    } catch (err) {
      setMessage({ kind: 'error', text: onFailure(err) })
    }
  }

  return (
    <>
      <form class="card" onSubmit={create} noValidate>
        <fieldset class="grid">
          <legend>{t('codes.create')}</legend>
          <div class="field">
            <label for="code-scope">{t('codes.scope')}</label>
            <select
              id="code-scope"
              value={scope}
              onChange={(e) => setScope((e.currentTarget as HTMLSelectElement).value)}
            >
              <option value="both">{t('codes.scope.both')}</option>
              <option value="downloads">{t('codes.scope.downloads')}</option>
              <option value="size">{t('codes.scope.size')}</option>
            </select>
          </div>
          <div class="field">
            <label for="code-hours">{t('codes.hours')}</label>
            <input
              id="code-hours"
              type="number"
              inputMode="numeric"
              min={1}
              max={8760}
              value={hours}
              aria-invalid={hoursError ? true : undefined}
              aria-describedby={hoursError ? 'code-hours-error' : undefined}
              onInput={(e) => setHours((e.currentTarget as HTMLInputElement).value)}
            />
            {hoursError && (
              <span id="code-hours-error" class="field-error">
                {hoursError}
              </span>
            )}
          </div>
          <div class="field">
            <label for="code-note">{t('codes.note')}</label>
            <input
              id="code-note"
              type="text"
              maxLength={500}
              value={note}
              onInput={(e) => setNote((e.currentTarget as HTMLInputElement).value)}
            />
          </div>
        </fieldset>
        <div class="actions">
          <button type="submit" data-testid="create-code">
            {t('codes.create')}
          </button>
        </div>
        {created && (
          <div class="alert ok created-code" role="status">
            <span>{t('codes.created')}</span> <code data-testid="new-auth-code">{created}</code>{' '}
            <CopyButton text={created} label={t('common.copy')} />
          </div>
        )}
      </form>
      {message && <Alert kind={message.kind}>{message.text}</Alert>}
      {!items ? (
        <p aria-busy="true">{t('common.loading')}</p>
      ) : items.length === 0 ? (
        <p class="muted">{t('codes.empty')}</p>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-labelledby="tab-codes">
          <table data-testid="codes-table">
            <thead>
              <tr>
                <th scope="col">{t('codes.hint')}</th>
                <th scope="col">{t('codes.scope')}</th>
                <th scope="col">{t('codes.status')}</th>
                <th scope="col">{t('codes.noteCol')}</th>
                <th scope="col">{t('codes.createdAt')}</th>
                <th scope="col">{t('codes.expiresAt')}</th>
                <th scope="col">{t('codes.usedBy')}</th>
                <th scope="col">
                  <span class="visually-hidden">{t('shares.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((r) => (
                <tr key={r.id}>
                  <td class="mono">{r.hint}</td>
                  <td>{t(`codes.scope.${r.scope}` as Key)}</td>
                  <td>
                    <span class={`badge ${r.status}`}>{t(`codes.status.${r.status}` as Key)}</span>
                  </td>
                  <td>{r.note ?? ''}</td>
                  <td>{formatDate(r.createdAt)}</td>
                  <td>{formatDate(r.expiresAt)}</td>
                  <td class="mono">{r.usedByShare ?? t('common.never')}</td>
                  <td>
                    {r.status === 'unused' && (
                      <button
                        type="button"
                        class="danger small"
                        aria-label={t('codes.revokeLabel', { hint: r.hint })}
                        onClick={() => void revoke(r)}
                      >
                        {t('codes.revoke')}
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </>
  )
}

function StoresPanel({ onFailure }: PanelProps) {
  const [stores, setStores] = useState<StoreInstance[] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  useEffect(() => {
    admin
      .stores()
      .then(setStores)
      .catch((err) => {
        if (err instanceof ApiFailure && err.status === 404) setMessage(t('stores.unavailable'))
        else setMessage(onFailure(err))
      })
  }, [])
  if (message) return <p class="muted">{message}</p>
  if (!stores) return <p aria-busy="true">{t('common.loading')}</p>
  if (!stores.length) return <p class="muted">{t('stores.empty')}</p>
  return (
    <ul class="stores" data-testid="stores">
      {stores.map((s) => {
        const id = `store-${s.id}`
        const used = s.usedBytes + s.reservedBytes
        return (
          <li key={s.id} class="card">
            <p class="store-head">
              <strong id={id}>{s.name}</strong> <span class="badge">{t(`store.${s.kind}` as Key)}</span>
              {!s.enabled && <span class="badge revoked">{t('stores.disabled')}</span>}
            </p>
            {s.quotaBytes ? (
              <meter
                min={0}
                max={s.quotaBytes}
                value={Math.min(used, s.quotaBytes)}
                high={s.quotaBytes * 0.8}
                optimum={0}
                aria-labelledby={id}
                aria-describedby={`${id}-usage`}
              />
            ) : null}
            <p id={`${id}-usage`} class="small">
              {s.quotaBytes
                ? t('stores.usage', {
                    used: formatBytes(s.usedBytes),
                    quota: formatBytes(s.quotaBytes),
                    percent: formatPercent(used, s.quotaBytes),
                  })
                : t('stores.usageNoQuota', { used: formatBytes(s.usedBytes) })}
              {s.reservedBytes > 0 && (
                <> · {t('stores.reserved', { reserved: formatBytes(s.reservedBytes) })}</>
              )}
            </p>
          </li>
        )
      })}
    </ul>
  )
}

function AuditPanel({ onFailure }: PanelProps) {
  const [items, setItems] = useState<AuditEntry[] | null>(null)
  const [message, setMessage] = useState<string | null>(null)
  useEffect(() => {
    admin
      .audit()
      .then((r) => setItems(r.items))
      .catch((err) => setMessage(onFailure(err)))
  }, [])
  if (message) return <Alert kind="error">{message}</Alert>
  if (!items) return <p aria-busy="true">{t('common.loading')}</p>
  if (!items.length) return <p class="muted">{t('audit.empty')}</p>
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-labelledby="tab-audit">
      <table>
        <thead>
          <tr>
            <th scope="col">{t('audit.at')}</th>
            <th scope="col">{t('audit.action')}</th>
            <th scope="col">{t('audit.actor')}</th>
            <th scope="col">{t('audit.target')}</th>
            <th scope="col">{t('audit.ip')}</th>
          </tr>
        </thead>
        <tbody>
          {items.map((e, i) => (
            <tr key={i}>
              <td>{formatDate(e.at)}</td>
              <td class="mono">{e.action}</td>
              <td>{e.actor}</td>
              <td class="mono">{e.target ?? ''}</td>
              <td class="mono">{e.ip ?? ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}
