import { useEffect, useState } from 'preact/hooks'
import { admin, type AuthCodeRecord } from '../api.ts'
import { formatDate, type Key, t } from '../i18n.ts'
import { Alert, CopyButton } from '../ui.tsx'
import type { PanelProps } from './panel.ts'

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
