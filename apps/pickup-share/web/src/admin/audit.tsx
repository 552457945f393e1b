import { useEffect, useState } from 'preact/hooks'
import { admin, type AuditEntry } from '../api.ts'
import { formatBytes, formatDate, type Key, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import type { PanelProps } from './panel.ts'
import { type Column, DataList } from './parts.tsx'
import { NUMBER_SETTINGS, SWITCH_SETTINGS } from './settings.tsx'

/** A share code as the log shows it: the first four digits (enough to tell shares apart). */
const shortCode = (code: string | null) => (code ? `${code.slice(0, 4)}…` : '?')
const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : 0)

/** The label a setting has on the settings page (its key when the page does not know it). */
function settingLabel(key: string): string {
  const f = [...NUMBER_SETTINGS, ...SWITCH_SETTINGS].find((x) => x.key === key)
  return f ? t(f.label ?? (`settings.${f.key}` as Key)) : key
}

/** One audit entry as a sentence in the page's language; ids stay out of the main text. */
export function describeEntry(e: AuditEntry): string {
  const d = e.details ?? {}
  const ip = e.ip ?? t('audit.unknownIp')
  switch (e.action) {
    case 'admin.login':
      return t('audit.admin.login', { ip })
    case 'admin.login_failed':
      return t('audit.admin.login_failed', { ip })
    case 'admin.logout':
      return t('audit.admin.logout')
    case 'share.delete':
      return t('audit.share.delete', { code: shortCode(e.target), files: num(d.files) })
    case 'shares.cleanup':
      return t('audit.shares.cleanup', {
        files: num(d.removedFiles) + num(d.partialFiles),
        size: formatBytes(num(d.freedBytes) + num(d.partialBytes)),
      })
    case 'settings.update': {
      const changed = Array.isArray(d.changed) ? d.changed.map(String) : []
      return changed.length
        ? t('audit.settings.update', { fields: changed.map(settingLabel).join(', ') })
        : t('audit.settings.updateNone')
    }
    case 'authcode.create':
      return t('audit.authcode.create', {
        scope: t(`codes.scope.${typeof d.scope === 'string' ? d.scope : 'both'}` as Key),
      })
    case 'authcode.revoke':
      return t('audit.authcode.revoke')
    case 'store.create':
      return t('audit.store.create', {
        name: e.target ?? '?',
        kind: t(`stores.kind.${typeof d.kind === 'string' ? d.kind : 'blob'}` as Key),
      })
    case 'store.update': {
      const what: string[] = []
      if (d.quotaBytes === null) what.push(t('stores.noQuota'))
      else if (typeof d.quotaBytes === 'number')
        what.push(t('audit.store.quota', { quota: formatBytes(d.quotaBytes) }))
      if (d.enabled === true) what.push(t('audit.store.enabled'))
      if (d.enabled === false) what.push(t('audit.store.disabled'))
      if (Array.isArray(d.settings) && d.settings.length) what.push(t('audit.store.settings'))
      return t('audit.store.update', { name: e.target ?? '?', what: what.join(', ') || '—' })
    }
    case 'store.delete':
      return num(d.deletedShares) > 0
        ? t('audit.store.deleteForced', { name: e.target ?? '?', count: num(d.deletedShares) })
        : t('audit.store.delete', { name: e.target ?? '?' })
    default:
      return t('audit.unknown', { action: e.action })
  }
}

function actorOf(actor: string): string {
  if (actor.startsWith('admin')) return t('audit.actor.admin')
  if (actor === 'cli') return t('audit.actor.cli')
  if (actor === 'anonymous') return t('audit.actor.anonymous')
  return actor
}

/** Built on each render: the labels follow the language switch. */
const auditColumns = (): Array<Column<AuditEntry>> => [
  { key: 'at', label: t('audit.at'), cell: (e) => formatDate(e.at) },
  { key: 'by', label: t('audit.by'), cell: (e) => actorOf(e.actor) },
  { key: 'ip', label: t('audit.ip'), class: 'mono', cell: (e) => e.ip ?? '' },
]

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
    <DataList
      rows={items}
      rowKey={(e) => `${e.at}-${e.action}-${e.target ?? ''}-${items.indexOf(e)}`}
      titleLabel={t('audit.event')}
      title={(e) => describeEntry(e)}
      columns={auditColumns()}
      labelledBy="tab-audit"
      testId="audit-list"
    />
  )
}
