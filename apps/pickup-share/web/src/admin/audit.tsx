import { useEffect, useState } from 'preact/hooks'
import { admin, type AuditEntry } from '../api.ts'
import { formatDate, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'

export function AuditPanel({ onFailure }: PanelProps) {
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
