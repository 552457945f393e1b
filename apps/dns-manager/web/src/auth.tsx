import { useEffect, useState } from 'preact/hooks'
import { ApiFailure, api, type Site } from './api.ts'
import { t } from './i18n.ts'
import { Alert, describeFailure, Field, fieldOf, Loading, PageTitle } from './ui.tsx'

const param = (name: string) => new URLSearchParams(location.search).get(name) ?? ''

/** Where to go after signing in: a path of ours only (never another site). */
const nextPath = () => {
  const next = param('next')
  return next.startsWith('/account') && !next.startsWith('//') ? next : '/account'
}

function useBusy() {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const run = async (e: Event, fn: () => Promise<void>) => {
    e.preventDefault()
    setBusy(true)
    setError(null)
    try {
      await fn()
    } catch (err) {
      setError(err)
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, run }
}

export function SignInPage() {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const { busy, error, run } = useBusy()
  const message =
    error instanceof ApiFailure && error.code === 'auth_invalid_password'
      ? t('signin.wrong')
      : error
        ? describeFailure(error)
        : null
  return (
    <section class="narrow" aria-labelledby="signin-title">
      <PageTitle id="signin-title">{t('signin.title')}</PageTitle>
      <form
        class="card"
        onSubmit={(e) =>
          run(e, async () => {
            await api.signin({ email, password })
            location.assign(nextPath())
          })
        }
      >
        <Field
          id="email"
          label={t('common.email')}
          type="email"
          autoComplete="username"
          required
          value={email}
          onInput={setEmail}
        />
        <Field
          id="password"
          label={t('common.password')}
          type="password"
          autoComplete="current-password"
          required
          value={password}
          onInput={setPassword}
        />
        {message && (
          <Alert kind="error" testId="signin-error">
            {message}
          </Alert>
        )}
        <div class="actions">
          <button type="submit" disabled={busy} data-testid="signin-submit">
            {t('signin.submit')}
          </button>
        </div>
        <p class="small">
          <a href="/account/reset">{t('signin.forgot')}</a> ·{' '}
          <a href="/account/signup">{t('signin.noAccount')}</a>
        </p>
      </form>
    </section>
  )
}

export function SignUpPage() {
  const invite = param('invite')
  const [site, setSite] = useState<Pick<Site, 'registration'> | null>(null)
  const [email, setEmail] = useState('')
  const [sent, setSent] = useState(false)
  const { busy, error, run } = useBusy()
  useEffect(() => {
    api
      .site()
      .then(setSite)
      .catch(() => setSite({ registration: 'invite' }))
  }, [])
  if (!site) return <Loading />
  const closed = site.registration === 'closed' || (site.registration === 'invite' && !invite)
  return (
    <section class="narrow" aria-labelledby="signup-title">
      <PageTitle id="signup-title">{t('signup.title')}</PageTitle>
      {closed ? (
        <Alert kind="info">
          {site.registration === 'closed' ? t('signup.closed') : t('signup.inviteOnly')}
        </Alert>
      ) : sent ? (
        <Alert kind="ok" testId="signup-sent">
          {t('signup.sent', { email })}
        </Alert>
      ) : (
        <form
          class="card"
          onSubmit={(e) =>
            run(e, async () => {
              await api.signup(invite ? { email, invite } : { email })
              setSent(true)
            })
          }
        >
          <p>{t('signup.intro')}</p>
          <Field
            id="email"
            label={t('common.email')}
            type="email"
            autoComplete="email"
            required
            value={email}
            onInput={setEmail}
            error={fieldOf(error) === 'email' ? describeFailure(error) : null}
          />
          {error && fieldOf(error) !== 'email' && <Alert kind="error">{describeFailure(error)}</Alert>}
          <div class="actions">
            <button type="submit" disabled={busy} data-testid="signup-submit">
              {t('signup.submit')}
            </button>
          </div>
        </form>
      )}
      <p class="small">
        <a href="/account/signin">{t('signup.haveAccount')}</a>
      </p>
    </section>
  )
}

/** The page a mailed link opens: choose a password (sign-up or reset). */
export function PasswordLinkPage({ kind }: { kind: 'signup' | 'reset' }) {
  const token = param('token')
  const [email, setEmail] = useState<string | null>(null)
  const [linkError, setLinkError] = useState<unknown>(null)
  const [password, setPassword] = useState('')
  const [done, setDone] = useState(false)
  const { busy, error, run } = useBusy()
  useEffect(() => {
    if (kind === 'signup')
      api
        .signupLink(token)
        .then((r) => setEmail(r.email))
        .catch(setLinkError)
  }, [])
  const title = kind === 'signup' ? t('complete.signupTitle') : t('complete.resetTitle')
  const invalid = (err: unknown) => err instanceof ApiFailure && err.code === 'link_invalid'
  return (
    <section class="narrow" aria-labelledby="complete-title">
      <PageTitle id="complete-title">{title}</PageTitle>
      {linkError || invalid(error) ? (
        <Alert kind="error" testId="link-invalid">
          {invalid(linkError) || invalid(error) ? t('complete.invalid') : describeFailure(linkError)}{' '}
          <a href={kind === 'signup' ? '/account/signup' : '/account/reset'}>{t('complete.again')}</a>
        </Alert>
      ) : done ? (
        <Alert kind="ok" testId="reset-done">
          {t('complete.resetDone')} <a href="/account/signin">{t('signin.title')}</a>
        </Alert>
      ) : (
        <form
          class="card"
          onSubmit={(e) =>
            run(e, async () => {
              if (kind === 'signup') {
                await api.signupComplete({ token, password })
                location.assign('/account')
              } else {
                await api.resetComplete({ token, password })
                setDone(true)
              }
            })
          }
        >
          {email && <p data-testid="link-email">{t('complete.for', { email })}</p>}
          <Field
            id="new-password"
            label={t('complete.password')}
            type="password"
            autoComplete="new-password"
            required
            hint={t('complete.passwordHint')}
            value={password}
            onInput={setPassword}
            error={error ? describeFailure(error) : null}
          />
          <div class="actions">
            <button type="submit" disabled={busy} data-testid="complete-submit">
              {kind === 'signup' ? t('complete.signupSubmit') : t('complete.resetSubmit')}
            </button>
          </div>
        </form>
      )}
    </section>
  )
}

export function ResetRequestPage() {
  const [email, setEmail] = useState('')
  const [sent, setSent] = useState(false)
  const { busy, error, run } = useBusy()
  return (
    <section class="narrow" aria-labelledby="reset-title">
      <PageTitle id="reset-title">{t('reset.title')}</PageTitle>
      {sent ? (
        <Alert kind="ok" testId="reset-sent">
          {t('reset.sent', { email })}
        </Alert>
      ) : (
        <form
          class="card"
          onSubmit={(e) =>
            run(e, async () => {
              await api.reset({ email })
              setSent(true)
            })
          }
        >
          <p>{t('reset.intro')}</p>
          <Field
            id="email"
            label={t('common.email')}
            type="email"
            autoComplete="email"
            required
            value={email}
            onInput={setEmail}
          />
          {error && <Alert kind="error">{describeFailure(error)}</Alert>}
          <div class="actions">
            <button type="submit" disabled={busy} data-testid="reset-submit">
              {t('reset.submit')}
            </button>
          </div>
        </form>
      )}
    </section>
  )
}
