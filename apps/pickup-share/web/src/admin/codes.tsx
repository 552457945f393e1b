import { useEffect, useState } from 'preact/hooks'
import { admin, type AuthCodeRecord } from '../api.ts'
import { formatDate, type Key, t } from '../i18n.ts'
import { Alert, CopyButton } from '../ui.tsx'
import type { PanelProps } from './panel.ts'
import { type Column, DataList } from './parts.tsx'

/** Built on each render: the labels follow the language switch. */
const codeColumns = (): Array<Column<AuthCodeRecord>> => [
  { key: 'scope', label: t('codes.scope'), cell: (r) => t(`codes.scope.${r.scope}` as Key) },
  {
    key: 'status',
    label: t('codes.status'),
    cell: (r) => <span class={`badge ${r.status}`}>{t(`codes.status.${r.status}` as Key)}</span>,
  },
  { key: 'note', label: t('codes.noteCol'), cell: (r) => r.note ?? '' },
  { key: 'created', label: t('codes.createdAt'), cell: (r) => formatDate(r.createdAt) },
  { key: 'expires', label: t('codes.expiresAt'), cell: (r) => formatDate(r.expiresAt) },
  { key: 'used', label: t('codes.usedBy'), class: 'mono', cell: (r) => r.usedByShare ?? t('common.never') },
]

export function CodesPanel({ onFailure }: PanelProps) {
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
        <DataList
          rows={items}
          rowKey={(r) => r.id}
          titleLabel={t('codes.hint')}
          title={(r) => <span class="mono">{r.hint}</span>}
          columns={codeColumns()}
          actions={(r) =>
            r.status === 'unused' && (
              <button
                type="button"
                class="danger small"
                aria-label={t('codes.revokeLabel', { hint: r.hint })}
                onClick={() => void revoke(r)}
              >
                {t('codes.revoke')}
              </button>
            )
          }
          labelledBy="tab-codes"
          testId="codes-table"
        />
      )}
    </>
  )
}
