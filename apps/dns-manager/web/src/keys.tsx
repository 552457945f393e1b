import { useEffect, useState } from 'preact/hooks'
import { type Account, type ApiKey, api, type NewKey, op, type Subdomain } from './api.ts'
import { formatDate, t } from './i18n.ts'
import { Alert, CopyButton, describeFailure, fieldOf, Loading, PageTitle, TableWrap } from './ui.tsx'

function SecretOnce({ secret }: { secret: NewKey }) {
  return (
    <div class="card secret" role="status" data-testid="new-secret">
      <h3>{t('keys.secretTitle')}</h3>
      <p>{t('keys.secretOnce')}</p>
      <dl class="facts">
        <div>
          <dt>{t('keys.key')}</dt>
          <dd>
            <code data-testid="new-api-key">{secret.api_key}</code>{' '}
            <CopyButton text={secret.api_key} label={t('keys.copyKey')} />
          </dd>
        </div>
        <div>
          <dt>{t('keys.secret')}</dt>
          <dd>
            <code data-testid="new-api-secret">{secret.api_secret}</code>{' '}
            <CopyButton text={secret.api_secret} label={t('keys.copySecret')} testId="copy-secret" />
          </dd>
        </div>
      </dl>
    </div>
  )
}

export function KeysPage({ account, reload }: { account: Account; reload: () => void }) {
  const [keys, setKeys] = useState<ApiKey[] | null>(null)
  const [secret, setSecret] = useState<NewKey | null>(null)
  const [message, setMessage] = useState<{ kind: 'ok' | 'error'; text: string } | null>(null)
  const [version, setVersion] = useState(0)
  const [allowList, setAllowList] = useState(account.ip_allow_list.join('\n'))
  const [listError, setListError] = useState<unknown>(null)
  const [busy, setBusy] = useState(false)

  const [subdomains, setSubdomains] = useState<Subdomain[]>([])
  const [acmeFor, setAcmeFor] = useState('')
  useEffect(() => {
    api
      .subdomains()
      .then((r) => setSubdomains(r.subdomains))
      .catch(() => setSubdomains([]))
  }, [])
  useEffect(() => {
    op('keys.list')
      .then((r) => setKeys(r.keys))
      .catch((err) => setMessage({ kind: 'error', text: describeFailure(err) }))
  }, [version])

  const act = async (fn: () => Promise<void>) => {
    setMessage(null)
    setBusy(true)
    try {
      await fn()
    } catch (err) {
      setMessage({ kind: 'error', text: describeFailure(err) })
    } finally {
      setBusy(false)
    }
  }
  const create = () =>
    act(async () => {
      const r = await op('keys.create')
      setSecret(r.key)
      setVersion((v) => v + 1)
    })
  // The ACME-only kind: TXT under _acme-challenge of one subdomain (or all of them), nothing else.
  const createAcme = (e: Event) => {
    e.preventDefault()
    return act(async () => {
      const r = await op('keys.create', {
        scope: 'acme',
        ...(acmeFor ? { subdomain_id: Number(acmeFor) } : {}),
      })
      setSecret(r.key)
      setVersion((v) => v + 1)
    })
  }
  const scopeOf = (k: ApiKey) => {
    if (k.scope === 'full') return t('keys.scopeFull')
    const name = subdomains.find((x) => x.id === k.subdomain_id)?.full_domain
    const kind =
      k.scope === 'acme' ? t('keys.scopeAcme') : k.scope === 'dyndns' ? t('keys.scopeDyndns') : k.scope
    return name ? `${kind} · ${name}` : k.scope === 'acme' ? `${kind} · ${t('keys.allSubdomains')}` : kind
  }
  const regenerate = (k: ApiKey) =>
    act(async () => {
      if (!confirm(t('keys.confirmRegenerate', { key: k.api_key }))) return
      const r = await op('keys.regenerate', { id: k.id })
      setSecret(r.key)
      setVersion((v) => v + 1)
    })
  const revoke = (k: ApiKey) =>
    act(async () => {
      if (!confirm(t('keys.confirmRevoke', { key: k.api_key }))) return
      await op('keys.delete', { id: k.id })
      setSecret(null)
      setMessage({ kind: 'ok', text: t('keys.revoked', { key: k.api_key }) })
      setVersion((v) => v + 1)
    })
  const toggle = () =>
    act(async () => {
      await api.accountSettings({ api_access_enabled: !account.api_access_enabled })
      setMessage({
        kind: 'ok',
        text: account.api_access_enabled ? t('keys.switchedOff') : t('keys.switchedOn'),
      })
      reload()
    })
  const saveList = async (e: Event) => {
    e.preventDefault()
    setListError(null)
    await act(async () => {
      try {
        const entries = allowList.split(/[\s,]+/).filter(Boolean)
        const r = await api.accountSettings({ ip_allow_list: entries })
        setAllowList(r.account.ip_allow_list.join('\n'))
        setMessage({ kind: 'ok', text: t('keys.listSaved') })
        reload()
      } catch (err) {
        if (fieldOf(err) === 'ip_allow_list') setListError(err)
        else throw err
      }
    })
  }

  return (
    <section aria-labelledby="keys-title">
      <PageTitle id="keys-title">{t('keys.title')}</PageTitle>
      {message && (
        <Alert kind={message.kind} testId="keys-message">
          {message.text}
        </Alert>
      )}

      <div class="card">
        <h2 id="switch-title">{t('keys.switch')}</h2>
        <p class="muted" id="switch-help">
          {t('keys.switchHelp')}
        </p>
        <button
          type="button"
          role="switch"
          aria-checked={account.api_access_enabled}
          aria-labelledby="switch-title"
          aria-describedby="switch-help switch-state"
          class={account.api_access_enabled ? 'switch on' : 'switch'}
          disabled={busy}
          onClick={toggle}
          data-testid="api-switch"
        >
          <span aria-hidden="true" class="knob" />
        </button>{' '}
        <span id="switch-state" data-testid="api-switch-state">
          {account.api_access_enabled ? t('keys.switchOn') : t('keys.switchOff')}
        </span>
      </div>

      <div class="toolbar">
        <h2>{t('keys.list')}</h2>
        <button type="button" onClick={create} disabled={busy} data-testid="create-key">
          {t('keys.create')}
        </button>
      </div>
      {secret && <SecretOnce secret={secret} />}
      {!keys ? (
        <Loading />
      ) : keys.length === 0 ? (
        <p class="muted">{t('keys.none')}</p>
      ) : (
        <TableWrap label={t('keys.list')}>
          <table data-testid="key-table">
            <caption class="visually-hidden">{t('keys.list')}</caption>
            <thead>
              <tr>
                <th scope="col">{t('keys.key')}</th>
                <th scope="col">{t('keys.scope')}</th>
                <th scope="col">{t('keys.created')}</th>
                <th scope="col">{t('keys.lastUsed')}</th>
                <th scope="col">
                  <span class="visually-hidden">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <td>
                    <code>{k.api_key}</code>
                  </td>
                  <td>{scopeOf(k)}</td>
                  <td>{formatDate(k.created_at)}</td>
                  <td>{formatDate(k.last_used_at)}</td>
                  <td class="row-actions">
                    <button
                      type="button"
                      class="secondary small"
                      onClick={() => regenerate(k)}
                      aria-label={t('keys.regenerateOne', { key: k.api_key })}
                    >
                      {t('keys.regenerate')}
                    </button>
                    <button
                      type="button"
                      class="danger small"
                      onClick={() => revoke(k)}
                      aria-label={t('keys.revokeOne', { key: k.api_key })}
                    >
                      {t('keys.revoke')}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}

      <form class="card" onSubmit={createAcme} aria-labelledby="acme-title">
        <h2 id="acme-title">{t('keys.acmeTitle')}</h2>
        <p class="muted">{t('keys.acmeHelp')}</p>
        <div class="field">
          <label for="acme-subdomain">{t('keys.acmeFor')}</label>
          <select
            id="acme-subdomain"
            value={acmeFor}
            onChange={(e) => setAcmeFor((e.currentTarget as HTMLSelectElement).value)}
            data-testid="acme-subdomain"
          >
            <option value="">{t('keys.allSubdomains')}</option>
            {subdomains.map((x) => (
              <option key={x.id} value={String(x.id)}>
                {x.full_domain}
              </option>
            ))}
          </select>
        </div>
        <div class="actions">
          <button type="submit" class="secondary" disabled={busy} data-testid="create-acme-key">
            {t('keys.acmeCreate')}
          </button>
        </div>
      </form>

      <form class="card" onSubmit={saveList} aria-labelledby="allow-title">
        <h2 id="allow-title">{t('keys.allowList')}</h2>
        <p class="muted">{t('keys.allowHelp')}</p>
        <div class="field">
          <label for="allow-list">{t('keys.allowLabel')}</label>
          <textarea
            id="allow-list"
            rows={4}
            spellcheck={false}
            value={allowList}
            aria-invalid={listError ? true : undefined}
            aria-describedby={`your-ip${listError ? ' allow-error' : ''}`}
            onInput={(e) => setAllowList((e.currentTarget as HTMLTextAreaElement).value)}
            data-testid="allow-list"
          />
          <small id="your-ip" class="muted" data-testid="your-ip">
            {t('keys.yourIp', { ip: account.your_ip ?? '?' })}
          </small>
          {listError && (
            <small id="allow-error" class="field-error">
              {describeFailure(listError)}
            </small>
          )}
        </div>
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="save-allow-list">
            {t('keys.saveList')}
          </button>
          {account.your_ip && (
            <button
              type="button"
              class="secondary"
              onClick={() =>
                setAllowList((v) => (v.trim() ? `${v.trim()}\n${account.your_ip}` : account.your_ip!))
              }
            >
              {t('keys.addMine')}
            </button>
          )}
        </div>
      </form>
    </section>
  )
}
