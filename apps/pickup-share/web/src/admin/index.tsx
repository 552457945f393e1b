import { useEffect, useRef, useState } from 'preact/hooks'
import { admin, ApiFailure } from '../api.ts'
import { formatWait, type Key, t } from '../i18n.ts'
import { Alert, describeFailure } from '../ui.tsx'
import { AuditPanel } from './audit.tsx'
import { CodesPanel } from './codes.tsx'
import { SettingsPanel } from './settings.tsx'
import { SharesPanel } from './shares.tsx'
import { StoresPanel } from './stores.tsx'
import './admin.css'

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
