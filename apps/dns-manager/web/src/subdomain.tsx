import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiFailure, api, type DnsRecord, op, opText, type Subdomain, type SystemInfo } from './api.ts'
import { formatDate, formatMoney, t } from './i18n.ts'
import { renewalOpens, zoneOf } from './overview.tsx'
import { RecordForm } from './record-form.tsx'
import { Alert, describeFailure, Loading, PageTitle, TableWrap } from './ui.tsx'

export function SubdomainPage({ id }: { id: number }) {
  const [subdomain, setSubdomain] = useState<Subdomain | null>(null)
  const [records, setRecords] = useState<DnsRecord[] | null>(null)
  const [system, setSystem] = useState<SystemInfo | null>(null)
  const [error, setError] = useState<unknown>(null)
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [form, setForm] = useState<{ editing: DnsRecord | null } | null>(null)
  const [confirming, setConfirming] = useState(false)
  const [zoneFile, setZoneFile] = useState<string | null>(null)
  const [version, setVersion] = useState(0)

  useEffect(() => {
    Promise.all([
      op('subdomains.get', { id }),
      op('dns_records.list', { subdomain_id: id, per_page: 500 }),
      api.system(),
    ])
      .then(([s, r, sys]) => {
        setSubdomain(s.subdomain)
        setRecords(r.dns_records)
        setSystem(sys.system)
      })
      .catch(setError)
  }, [version])

  if (error)
    return (
      <Alert kind="error">
        {error instanceof ApiFailure && error.code === 'subdomain_not_found'
          ? t('subdomain.notFound')
          : describeFailure(error)}
      </Alert>
    )
  if (!subdomain || !records || !system) return <Loading />

  const refresh = (text: string) => {
    setForm(null)
    setMessage({ kind: 'ok', text })
    setVersion((v) => v + 1)
  }
  const fail = (err: unknown) => setMessage({ kind: 'error', text: describeFailure(err) })
  const removeRecord = async (r: DnsRecord) => {
    if (!confirm(t('records.confirmDelete', { type: r.type, name: r.name, content: r.content }))) return
    try {
      await op('dns_records.delete', { subdomain_id: id, id: r.id })
      refresh(t('records.deleted'))
    } catch (err) {
      fail(err)
    }
  }
  const renew = async () => {
    try {
      const r = await op('subdomains.renew', { id })
      refresh(t('subdomain.renewed', { date: formatDate(r.subdomain.expires_at) }))
    } catch (err) {
      fail(err)
    }
  }
  const remove = async () => {
    try {
      await op('subdomains.delete', { id })
      location.assign('/account?deleted=' + encodeURIComponent(subdomain.full_domain))
    } catch (err) {
      setConfirming(false)
      fail(err)
    }
  }
  const showZone = async () => {
    try {
      setZoneFile(zoneFile === null ? await opText('subdomains.zone', { id }) : null)
    } catch (err) {
      fail(err)
    }
  }
  const zone = zoneOf(system, subdomain.rootdomain)
  const opens = renewalOpens(subdomain, system)

  return (
    <section aria-labelledby="subdomain-title">
      <PageTitle id="subdomain-title">{subdomain.full_domain}</PageTitle>
      <dl class="facts card">
        <div>
          <dt>{t('overview.status')}</dt>
          <dd>
            <span class={`badge ${subdomain.status}`}>{t(`status.${subdomain.status}`)}</span>
          </dd>
        </div>
        <div>
          <dt>{t('overview.expires')}</dt>
          <dd>{subdomain.never_expires ? t('common.never') : formatDate(subdomain.expires_at)}</dd>
        </div>
        {opens && zone && (
          <div>
            <dt>{t('overview.renewal')}</dt>
            <dd>
              {t('overview.renewalValue', {
                price: formatMoney(zone.price_cents),
                date: formatDate(opens.toISOString()),
              })}
            </dd>
          </div>
        )}
      </dl>
      {message && (
        <Alert kind={message.kind} testId="subdomain-message">
          {message.text}
        </Alert>
      )}
      <div class="toolbar">
        <h2>{t('records.title')}</h2>
        <div class="toolbar-actions">
          <button type="button" onClick={() => setForm({ editing: null })} data-testid="add-record">
            {t('records.add')}
          </button>
        </div>
      </div>
      {form && (
        <RecordForm
          key={form.editing?.id ?? 'new'}
          subdomainId={id}
          editing={form.editing}
          onDone={refresh}
          onCancel={() => setForm(null)}
        />
      )}
      {records.length === 0 ? (
        <p class="muted">{t('records.none')}</p>
      ) : (
        <TableWrap label={t('records.title')}>
          <table data-testid="record-table">
            <caption class="visually-hidden">{t('records.title')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('field.name')}</th>
                <th scope="col">{t('records.type')}</th>
                <th scope="col">{t('field.content')}</th>
                <th scope="col">{t('field.ttl')}</th>
                <th scope="col">
                  <span class="visually-hidden">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {records.map((r) => (
                <tr key={r.id} data-testid={`record-${r.type}`}>
                  <td>{r.name}</td>
                  <td>{r.type}</td>
                  <td class="content">
                    {[r.priority, r.weight, r.port, r.flag, r.tag].filter((x) => x !== null).join(' ')}{' '}
                    {r.content}
                  </td>
                  <td>{r.ttl}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      class="secondary small"
                      onClick={() => setForm({ editing: r })}
                      aria-label={t('records.editOne', { type: r.type, name: r.name })}
                    >
                      {t('common.edit')}
                    </button>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => removeRecord(r)}
                      aria-label={t('records.deleteOne', { type: r.type, name: r.name })}
                    >
                      {t('common.delete')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <h2>{t('subdomain.manage')}</h2>
      <div class="actions">
        <button type="button" class="secondary" onClick={renew} data-testid="renew">
          {zone ? t('subdomain.renew', { price: formatMoney(zone.price_cents) }) : t('subdomain.renewPlain')}
        </button>
        <button
          type="button"
          class="secondary"
          onClick={showZone}
          aria-expanded={zoneFile !== null}
          aria-controls="zone-file"
          data-testid="zone-file-toggle"
        >
          {zoneFile === null ? t('subdomain.showZone') : t('subdomain.hideZone')}
        </button>
        <button
          type="button"
          class="danger"
          onClick={() => setConfirming(true)}
          data-testid="delete-subdomain"
        >
          {t('subdomain.delete')}
        </button>
      </div>
      {zoneFile !== null && (
        <pre
          id="zone-file"
          class="card zone-file"
          tabIndex={0}
          aria-label={t('subdomain.zoneFile')}
          data-testid="zone-file"
        >
          {zoneFile}
        </pre>
      )}
      {confirming && (
        <div
          class="card confirm"
          role="alertdialog"
          aria-labelledby="confirm-title"
          aria-describedby="confirm-text"
          data-testid="confirm-delete"
        >
          <h3 id="confirm-title">{t('subdomain.confirmTitle', { name: subdomain.full_domain })}</h3>
          <p id="confirm-text">
            {t('subdomain.confirmText', { name: subdomain.full_domain, count: records.length })}
          </p>
          <ConfirmButtons onConfirm={remove} onCancel={() => setConfirming(false)} />
        </div>
      )}
    </section>
  )
}

function ConfirmButtons({ onConfirm, onCancel }: { onConfirm: () => void; onCancel: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null)
  useEffect(() => cancel.current?.focus(), [])
  return (
    <div class="actions">
      <button type="button" class="danger" onClick={onConfirm} data-testid="confirm-delete-yes">
        {t('subdomain.confirmYes')}
      </button>
      <button type="button" class="secondary" ref={cancel} onClick={onCancel}>
        {t('common.cancel')}
      </button>
    </div>
  )
}
