import { useEffect, useState } from 'preact/hooks'
import { ApiFailure, type AuditEntry, api } from './api.ts'
import { formatDate, t } from './i18n.ts'
import { Alert, describeFailure, Field, Loading, PageTitle, TableWrap } from './ui.tsx'

export function AuditPage() {
  const [entries, setEntries] = useState<AuditEntry[] | null>(null)
  const [next, setNext] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const load = (before?: string) =>
    api
      .audit(before)
      .then((r) => {
        setEntries((e) => (before && e ? [...e, ...r.entries] : r.entries))
        setNext(r.next_before)
      })
      .catch(setError)
  useEffect(() => {
    void load()
  }, [])
  return (
    <section aria-labelledby="audit-title">
      <PageTitle id="audit-title">{t('audit.title')}</PageTitle>
      <p class="muted">{t('audit.intro')}</p>
      {error ? (
        <Alert kind="error">{describeFailure(error)}</Alert>
      ) : !entries ? (
        <Loading />
      ) : (
        <TableWrap label={t('audit.title')}>
          <table data-testid="audit-table">
            <caption class="visually-hidden">{t('audit.title')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('audit.when')}</th>
                <th scope="col">{t('audit.what')}</th>
                <th scope="col">{t('audit.target')}</th>
                <th scope="col">{t('audit.outcome')}</th>
                <th scope="col">{t('audit.via')}</th>
                <th scope="col">{t('audit.from')}</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((e) => (
                <tr key={e.id}>
                  <td>{formatDate(e.at)}</td>
                  <td>
                    <code>{e.operation}</code>
                  </td>
                  <td>{e.target ?? '—'}</td>
                  <td>{e.outcome}</td>
                  <td>{e.via === 'web' ? t('audit.web') : t('audit.api')}</td>
                  <td>{e.ip ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      {next && (
        <div class="actions">
          <button type="button" class="secondary" onClick={() => load(next)}>
            {t('audit.more')}
          </button>
        </div>
      )}
    </section>
  )
}

export function SecurityPage() {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [error, setError] = useState<unknown>(null)
  const [done, setDone] = useState(false)
  const [busy, setBusy] = useState(false)
  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    setDone(false)
    try {
      await api.changePassword({ current_password: current, new_password: next })
      setDone(true)
      setCurrent('')
      setNext('')
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  const field = error instanceof ApiFailure ? error.details.field : undefined
  return (
    <section class="narrow" aria-labelledby="security-title">
      <PageTitle id="security-title">{t('security.title')}</PageTitle>
      <form class="card" onSubmit={submit}>
        <Field
          id="current-password"
          label={t('security.current')}
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onInput={setCurrent}
          error={field === 'current_password' ? t('security.wrong') : null}
        />
        <Field
          id="new-password"
          label={t('security.new')}
          type="password"
          autoComplete="new-password"
          required
          hint={t('complete.passwordHint')}
          value={next}
          onInput={setNext}
          error={field === 'new_password' ? describeFailure(error) : null}
        />
        {error && field !== 'current_password' && field !== 'new_password' && (
          <Alert kind="error">{describeFailure(error)}</Alert>
        )}
        {done && <Alert kind="ok">{t('security.changed')}</Alert>}
        <div class="actions">
          <button type="submit" disabled={busy}>
            {t('security.submit')}
          </button>
        </div>
      </form>
    </section>
  )
}
