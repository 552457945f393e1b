import {
  createLanguage,
  englishCount,
  formatDateTime,
  formatWait as sharedFormatWait,
} from '@quartet/web-pages/i18n'
import { en, type Key } from './i18n-en.ts'
import { zh } from './i18n-zh-hans.ts'

export type { Key } from './i18n-en.ts'

/** English and Simplified Chinese. The browser's languages choose by default; the switch is remembered. */
export type Lang = 'en' | 'zh-Hans'
export const LANGS: Array<{ id: Lang; label: string }> = [
  { id: 'en', label: 'English' },
  { id: 'zh-Hans', label: '简体中文' },
]

const tables: Record<Lang, Record<Key, string>> = { en, 'zh-Hans': zh }

const language = createLanguage({
  tables,
  fallback: 'en',
  storageKey: 'dns-manager.lang',
  fromBrowser: (languages) =>
    languages.some((l) => /^zh(-(hans|cn|sg))?$/i.test(l) || /^zh-hans/i.test(l)) ? 'zh-Hans' : 'en',
})

export const { initialLang, setLang, lang, t } = language

const zhShown = () => lang() === 'zh-Hans'

/** Moments are shown in UTC, and say so. */
export const formatDate = (iso: string | null | undefined): string =>
  formatDateTime(iso, lang(), { utc: true })

/** Prices and balances are kept in cents of the operator's currency, shown with two decimals. */
export function formatMoney(cents: number): string {
  if (cents === 0) return zhShown() ? '免费' : 'free'
  return new Intl.NumberFormat(lang(), { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    cents / 100,
  )
}

export function termOf(years: number): string {
  if (years === 0) return zhShown() ? '永久' : 'never expires'
  return zhShown() ? `${years} 年` : englishCount(years, 'year')
}

export const formatWait = (seconds: number): string => sharedFormatWait(seconds, lang())
