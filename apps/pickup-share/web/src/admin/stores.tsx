import { useEffect, useState } from 'preact/hooks'
import { admin, ApiFailure, type StoreInstance } from '../api.ts'
import { formatBytes, formatPercent, type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'
import { StoreForm } from './store-form.tsx'
import { describeTest, type Message, SECRETS } from './store-settings.ts'

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
