import { useEffect, useState } from 'preact/hooks'
import { type Account, ApiFailure, api, op, type Subdomain, type SystemInfo, type Zone } from './api.ts'
import { formatDate, formatMoney, t, termOf } from './i18n.ts'
import { Alert, describeFailure, fieldOf, Loading, PageTitle, TableWrap } from './ui.tsx'

const DAY_MS = 86_400_000

/** When renewal opens: `renew_window_days` before expiry (never for a name that never expires). */
export function renewalOpens(s: Subdomain, system: SystemInfo): Date | null {
  if (s.never_expires || !s.expires_at) return null
  return new Date(Date.parse(s.expires_at) - system.limits.renew_window_days * DAY_MS)
}

export const zoneOf = (system: SystemInfo, name: string): Zone | undefined =>
  system.zones.find((z) => z.name === name)

export function OverviewPage({ account }: { account: Account }) {
  const [subdomains, setSubdomains] = useState<Subdomain[] | null>(null)
  const [system, setSystem] = useState<SystemInfo | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    Promise.all([api.subdomains(), api.system()])
      .then(([s, sys]) => {
        setSubdomains(s.subdomains)
        setSystem(sys.system)
      })
      .catch(setError)
  }, [])
  return (
    <section aria-labelledby="overview-title">
      <PageTitle id="overview-title">{t('overview.title')}</PageTitle>
      <dl class="facts card">
        <div>
          <dt>{t('overview.account')}</dt>
          <dd data-testid="account-email">{account.email}</dd>
        </div>
        <div>
          <dt>{t('overview.balance')}</dt>
          <dd data-testid="balance">{formatMoney(account.balance_cents)}</dd>
        </div>
        <div>
          <dt>{t('overview.quota')}</dt>
          <dd data-testid="quota">
            {subdomains
              ? t('overview.quotaValue', { used: subdomains.length, total: account.quota_total })
              : '…'}
          </dd>
        </div>
        <div>
          <dt>{t('keys.switch')}</dt>
          <dd>{account.api_access_enabled ? t('keys.switchOn') : t('keys.switchOff')}</dd>
        </div>
      </dl>
      <div class="toolbar">
        <h2>{t('overview.subdomains')}</h2>
        <a class="button" href="/account/register" data-testid="register-link">
          {t('overview.register')}
        </a>
      </div>
      {error ? (
        <Alert kind="error">{describeFailure(error)}</Alert>
      ) : !subdomains || !system ? (
        <Loading />
      ) : subdomains.length === 0 ? (
        <p class="muted">{t('overview.none')}</p>
      ) : (
        <TableWrap label={t('overview.subdomains')}>
          <table data-testid="subdomain-table">
            <caption class="visually-hidden">{t('overview.subdomains')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('overview.name')}</th>
                <th scope="col">{t('overview.status')}</th>
                <th scope="col">{t('overview.expires')}</th>
                <th scope="col">{t('overview.renewal')}</th>
              </tr>
            </thead>
            <tbody>
              {subdomains.map((s) => {
                const zone = zoneOf(system, s.rootdomain)
                const opens = renewalOpens(s, system)
                return (
                  <tr key={s.id}>
                    <td>
                      <a href={`/account/subdomains/${s.id}`}>{s.full_domain}</a>
                    </td>
                    <td>
                      <span class={`badge ${s.status}`}>{t(`status.${s.status}`)}</span>
                    </td>
                    <td>{s.never_expires ? t('common.never') : formatDate(s.expires_at)}</td>
                    <td>
                      {opens && zone
                        ? t('overview.renewalValue', {
                            price: formatMoney(zone.price_cents),
                            date: formatDate(opens.toISOString()),
                          })
                        : '—'}
                    </td>
                  </tr>
                )
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  )
}

type Availability =
  { state: 'idle' | 'checking' } | { state: 'known'; status: string } | { state: 'error'; message: string }

export function RegisterPage({ account }: { account: Account }) {
  const [system, setSystem] = useState<SystemInfo | null>(null)
  const [label, setLabel] = useState('')
  const [zone, setZone] = useState('')
  const [availability, setAvailability] = useState<Availability>({ state: 'idle' })
  const [error, setError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)
  useEffect(() => {
    api
      .system()
      .then((r) => {
        setSystem(r.system)
        setZone(r.system.zones[0]?.name ?? '')
      })
      .catch(setError)
  }, [])
  // Availability as the name is typed: whois.lookup, the same operation the API offers.
  useEffect(() => {
    const name = label.trim()
    if (!name || !zone) return setAvailability({ state: 'idle' })
    setAvailability({ state: 'checking' })
    let live = true
    const timer = setTimeout(() => {
      op('whois.lookup', { domain: `${name}.${zone}` })
        .then((r) => live && setAvailability({ state: 'known', status: r.whois.status }))
        .catch((err) => live && setAvailability({ state: 'error', message: describeFailure(err) }))
    }, 250)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [label, zone])

  const submit = async (e: Event) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      const r = await op('subdomains.create', {
        subdomain: label.trim(),
        rootdomain: zone,
      })
      location.assign(`/account/subdomains/${r.subdomain.id}`)
    } catch (err) {
      setError(err)
      setBusy(false)
    }
  }
  if (!system) return error ? <Alert kind="error">{describeFailure(error)}</Alert> : <Loading />
  const z = zoneOf(system, zone)
  const registerMessage = (err: unknown) => {
    if (!(err instanceof ApiFailure)) return describeFailure(err)
    if (err.code === 'quota_exceeded') return t('register.quota', { total: account.quota_total })
    if (err.code === 'insufficient_balance')
      return t('register.balance', { balance: formatMoney(account.balance_cents) })
    if (err.code === 'subdomain_taken') return t('register.taken')
    if (err.details.reserved) return t('register.reserved')
    return err.message
  }
  const labelError = error && fieldOf(error) === 'subdomain' ? registerMessage(error) : null
  return (
    <section class="narrow" aria-labelledby="register-title">
      <PageTitle id="register-title">{t('register.title')}</PageTitle>
      <form class="card" onSubmit={submit}>
        <div class="field">
          <label for="label">{t('register.name')}</label>
          <input
            id="label"
            value={label}
            required
            autoComplete="off"
            spellcheck={false}
            aria-invalid={labelError ? true : undefined}
            aria-describedby="label-availability"
            onInput={(e) => setLabel((e.currentTarget as HTMLInputElement).value)}
            data-testid="label"
          />
          <small
            id="label-availability"
            role="status"
            class={
              availability.state === 'known' && availability.status !== 'available' ? 'field-error' : 'muted'
            }
            data-testid="availability"
          >
            {availability.state === 'checking'
              ? t('register.checking')
              : availability.state === 'known'
                ? t(
                    `availability.${availability.status === 'available' ? 'available' : availability.status === 'reserved' ? 'reserved' : 'taken'}`,
                    {
                      name: `${label.trim()}.${zone}`,
                    },
                  )
                : availability.state === 'error'
                  ? availability.message
                  : ''}
          </small>
          {labelError && <small class="field-error">{labelError}</small>}
        </div>
        <div class="field">
          <label for="zone">{t('register.zone')}</label>
          <select
            id="zone"
            value={zone}
            onChange={(e) => setZone((e.currentTarget as HTMLSelectElement).value)}
            data-testid="zone"
          >
            {system.zones.map((x) => (
              <option key={x.name} value={x.name}>
                {x.name}
              </option>
            ))}
          </select>
          {z && (
            <small class="muted" data-testid="zone-price">
              {t('register.price', { price: formatMoney(z.price_cents), term: termOf(z.term_years) })}
            </small>
          )}
        </div>
        {error && !labelError && (
          <Alert kind="error" testId="register-error">
            {registerMessage(error)}
          </Alert>
        )}
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="register-submit">
            {t('register.submit')}
          </button>
        </div>
      </form>
    </section>
  )
}
