import '@quartet/web-pages/style.css'
import './back-office.css'
import { LanguageSelect } from '@quartet/web-pages/ui'
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api } from './api.ts'
import { PasswordLinkPage, ResetRequestPage, SignInPage, SignUpPage } from './auth.tsx'
import { initialLang, type Key, type Lang, LANGS, setLang, t } from './i18n.ts'
import { KeysPage } from './keys.tsx'
import { AuditPage, SecurityPage } from './misc.tsx'
import { OverviewPage, RegisterPage } from './overview.tsx'
import { SubdomainPage } from './subdomain.tsx'
import { Alert, describeFailure, Loading, useAccount } from './ui.tsx'

type Route =
  | { page: 'signin' | 'signup' | 'signup-complete' | 'reset' | 'reset-complete' }
  | { page: 'overview' | 'register' | 'keys' | 'audit' | 'security'; signedIn: true }
  | { page: 'subdomain'; signedIn: true; id: number }
  | { page: 'missing' }

function routeOf(path: string): Route {
  const p = path.replace(/\/+$/, '') || '/'
  const sub = /^\/account\/subdomains\/(\d{1,10})$/.exec(p)
  if (sub) return { page: 'subdomain', signedIn: true, id: Number(sub[1]) }
  const table: Record<string, Route> = {
    '/': { page: 'overview', signedIn: true },
    '/account': { page: 'overview', signedIn: true },
    '/account/signin': { page: 'signin' },
    '/account/signup': { page: 'signup' },
    '/account/signup/complete': { page: 'signup-complete' },
    '/account/reset': { page: 'reset' },
    '/account/reset/complete': { page: 'reset-complete' },
    '/account/register': { page: 'register', signedIn: true },
    '/account/keys': { page: 'keys', signedIn: true },
    '/account/audit': { page: 'audit', signedIn: true },
    '/account/security': { page: 'security', signedIn: true },
  }
  return table[p] ?? { page: 'missing' }
}

const NAV: Array<{ page: string; href: string; key: Key }> = [
  { page: 'overview', href: '/account', key: 'nav.overview' },
  { page: 'register', href: '/account/register', key: 'nav.register' },
  { page: 'keys', href: '/account/keys', key: 'nav.keys' },
  { page: 'audit', href: '/account/audit', key: 'nav.audit' },
  { page: 'security', href: '/account/security', key: 'nav.security' },
]

const TITLES: Record<Route['page'], Key> = {
  signin: 'signin.title',
  signup: 'signup.title',
  'signup-complete': 'complete.signupTitle',
  reset: 'reset.title',
  'reset-complete': 'complete.resetTitle',
  overview: 'overview.title',
  register: 'register.title',
  keys: 'keys.title',
  audit: 'audit.title',
  security: 'security.title',
  subdomain: 'subdomain.title',
  missing: 'missing.title',
}

function SignedIn({ route }: { route: Extract<Route, { signedIn: true }> }) {
  const [account, reload, error] = useAccount()
  if (error) return <Alert kind="error">{describeFailure(error)}</Alert>
  if (!account) return <Loading />
  switch (route.page) {
    case 'overview':
      return <OverviewPage account={account} />
    case 'register':
      return <RegisterPage account={account} />
    case 'keys':
      return <KeysPage account={account} reload={reload} />
    case 'audit':
      return <AuditPage />
    case 'security':
      return <SecurityPage />
    case 'subdomain':
      return <SubdomainPage id={route.id} />
  }
}

function App() {
  const [lang, setLangState] = useState<Lang>(() => {
    const l = initialLang()
    setLang(l, false)
    return l
  })
  const route = routeOf(location.pathname)
  const signedIn = 'signedIn' in route

  useEffect(() => {
    document.title = `${t(TITLES[route.page])} · ${t('app.name')}`
    // Each page load is a new page: its heading takes the focus once it is there, unless the
    // person has already moved it (never pulled away from a field being typed into).
    const timer = setTimeout(() => {
      if (document.activeElement && document.activeElement !== document.body) return
      document.querySelector<HTMLElement>('main h1')?.focus({ preventScroll: true })
    }, 300)
    return () => clearTimeout(timer)
  }, [lang])

  const signOut = async () => {
    try {
      await api.signout()
    } finally {
      location.assign('/account/signin')
    }
  }

  return (
    <>
      <a class="skip" href="#main">
        {t('skip')}
      </a>
      <header class="top">
        <a class="brand" href="/account">
          <svg aria-hidden="true" viewBox="0 0 32 32" width="28" height="28">
            <rect width="32" height="32" rx="7" class="brand-bg" />
            <circle cx="16" cy="16" r="8" fill="none" stroke="#fff" stroke-width="2.5" />
            <path
              d="M8 16h16M16 8c3 3 3 13 0 16M16 8c-3 3-3 13 0 16"
              fill="none"
              stroke="#fff"
              stroke-width="2"
            />
          </svg>
          <span>{t('app.name')}</span>
        </a>
        {signedIn && (
          <nav aria-label={t('nav.label')}>
            <ul>
              {NAV.map((n) => (
                <li key={n.page}>
                  <a href={n.href} aria-current={n.page === route.page ? 'page' : undefined}>
                    {t(n.key)}
                  </a>
                </li>
              ))}
              <li>
                <button type="button" class="secondary small" onClick={signOut} data-testid="signout">
                  {t('nav.signout')}
                </button>
              </li>
            </ul>
          </nav>
        )}
        <LanguageSelect
          label={t('lang.label')}
          value={lang}
          langs={LANGS}
          onChange={(l) => {
            setLang(l, true)
            setLangState(l)
          }}
        />
      </header>
      <main id="main" tabIndex={-1}>
        {'signedIn' in route ? (
          <SignedIn route={route} />
        ) : route.page === 'signin' ? (
          <SignInPage />
        ) : route.page === 'signup' ? (
          <SignUpPage />
        ) : route.page === 'signup-complete' ? (
          <PasswordLinkPage kind="signup" />
        ) : route.page === 'reset' ? (
          <ResetRequestPage />
        ) : route.page === 'reset-complete' ? (
          <PasswordLinkPage kind="reset" />
        ) : (
          <section aria-labelledby="missing-title">
            <h1 id="missing-title" tabIndex={-1}>
              {t('missing.title')}
            </h1>
            <p>
              <a href="/account">{t('nav.overview')}</a>
            </p>
          </section>
        )}
      </main>
    </>
  )
}

render(<App />, document.getElementById('app')!)
