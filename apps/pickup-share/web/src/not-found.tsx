import { t } from './i18n.ts'

/** The page of an unknown address (served with status 404; API paths keep their JSON envelope). */
export function NotFoundPage() {
  return (
    <section aria-labelledby="not-found-title" data-testid="not-found">
      <h1 id="not-found-title">{t('notFound.title')}</h1>
      <p>{t('notFound.text')}</p>
      <ul>
        <li>
          <a href="/">{t('nav.send')}</a>
        </li>
        <li>
          <a href="/pickup">{t('nav.pickup')}</a>
        </li>
      </ul>
    </section>
  )
}
