import { useEffect, useState } from 'preact/hooks'
import { admin, type AdminShare } from '../api.ts'
import { formatBytes, formatDate, t } from '../i18n.ts'
import { Alert } from '../ui.tsx'
import { TextBadge } from '../text-share.tsx'
import type { PanelProps } from './panel.ts'
import { type Column, DataList } from './parts.tsx'

/** Built on each render: the labels follow the language switch. */
const shareColumns = (): Array<Column<AdminShare>> => [
  {
    key: 'files',
    label: t('shares.files'),
    class: 'names',
    cell: (s) => s.files.map((f) => f.name).join(', '),
  },
  { key: 'size', label: t('shares.size'), cell: (s) => formatBytes(s.totalBytes) },
  { key: 'created', label: t('shares.created'), cell: (s) => formatDate(s.createdAt) },
  { key: 'expires', label: t('shares.expires'), cell: (s) => formatDate(s.expiresAt) },
  {
    key: 'downloads',
    label: t('shares.downloads'),
    cell: (s) =>
      s.maxDownloads === null ? t('common.unlimited') : `${s.remaining ?? 0} / ${s.maxDownloads}`,
  },
]

export function SharesPanel({ onFailure }: PanelProps) {
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
        <DataList
          rows={data.items}
          rowKey={(s) => s.code}
          titleLabel={t('shares.code')}
          title={(s) => (
            <>
              <span class="mono">{s.code}</span> <TextBadge files={s.files} />
              {s.protected && (
                <span class="badge" title={t('shares.protectedLabel')} data-testid="protected-badge">
                  {t('shares.protected')}
                </span>
              )}
              {s.encrypted && (
                <span class="badge" title={t('e2e.badgeLabel')} data-testid="encrypted-badge">
                  {t('e2e.badge')}
                </span>
              )}
            </>
          )}
          columns={shareColumns()}
          actions={(s) => (
            <button
              type="button"
              class="danger small"
              aria-label={t('shares.deleteLabel', { code: s.code })}
              onClick={() => void remove(s.code)}
            >
              {t('shares.delete')}
            </button>
          )}
          labelledBy="tab-shares"
          testId="shares-table"
        />
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
