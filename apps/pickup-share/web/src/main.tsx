import { LanguageSelect } from '@quartet/web-pages/ui'
import { type ComponentType, render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { initialLang, type Lang, LANGS, setLang, t } from './i18n.ts'
import { NotFoundPage } from './not-found.tsx'
import { PickupPage } from './pickup.tsx'
import { SendPage } from './send.tsx'
import '@quartet/web-pages/style.css'

type Page = 'send' | 'pickup' | 'admin' | 'notFound'

/** The page a path names; any other path is the 404 page (the server answers it with 404). */
const pageOf = (path: string): Page => {
  const p = path.replace(/\/+$/, '') || '/'
  return p === '/' ? 'send' : p === '/pickup' ? 'pickup' : p === '/admin' ? 'admin' : 'notFound'
}

/** The admin area is its own chunk, loaded only on /admin (senders and receivers never fetch it). */
function LazyAdmin() {
  const [Admin, setAdmin] = useState<ComponentType | null>(null)
  const [failed, setFailed] = useState(false)
  useEffect(() => {
    import('./admin.tsx').then(
      (m) => setAdmin(() => m.AdminPage),
      () => setFailed(true),
    )
  }, [])
  if (failed) return <p role="alert">{t('common.network')}</p>
  return Admin ? <Admin /> : <p aria-busy="true">{t('common.loading')}</p>
}

const NAV: Array<{ page: Page; href: string; key: 'nav.send' | 'nav.pickup' | 'nav.admin' }> = [
  { page: 'send', href: '/', key: 'nav.send' },
  { page: 'pickup', href: '/pickup', key: 'nav.pickup' },
  { page: 'admin', href: '/admin', key: 'nav.admin' },
]

function App() {
  const [lang, setLangState] = useState<Lang>(() => {
    const l = initialLang()
    setLang(l, false)
    return l
  })
  const page = pageOf(location.pathname)
  const title =
    page === 'send'
      ? t('send.title')
      : page === 'pickup'
        ? t('pickup.title')
        : page === 'admin'
          ? t('admin.title')
          : t('notFound.title')

  useEffect(() => {
    document.title = `${title} · ${t('app.name')}`
  }, [title, lang])

  const changeLang = (l: Lang) => {
    setLang(l, true)
    setLangState(l)
  }

  return (
    <>
      <a class="skip" href="#main">
        {t('skip')}
      </a>
      <header class="top">
        <a class="brand" href="/">
          <svg aria-hidden="true" viewBox="0 0 32 32" width="28" height="28">
            <rect width="32" height="32" rx="7" class="brand-bg" />
            <path d="M9 17l7-8 7 8h-4.5v6h-5v-6z" fill="#fff" />
          </svg>
          <span>{t('app.name')}</span>
        </a>
        <nav aria-label={t('nav.label')}>
          <ul>
            {NAV.map((n) => (
              <li key={n.page}>
                <a href={n.href} aria-current={n.page === page ? 'page' : undefined}>
                  {t(n.key)}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <LanguageSelect label={t('lang.label')} value={lang} langs={LANGS} onChange={changeLang} />
      </header>
      <main id="main" tabIndex={-1}>
        {page === 'send' ? (
          <SendPage />
        ) : page === 'pickup' ? (
          <PickupPage />
        ) : page === 'admin' ? (
          <LazyAdmin />
        ) : (
          <NotFoundPage />
        )}
      </main>
    </>
  )
}

render(<App />, document.getElementById('app')!)
