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
const STORAGE_KEY = 'dns-manager.lang'
let current: Lang = 'en'

export function initialLang(): Lang {
  try {
    const saved = localStorage.getItem(STORAGE_KEY)
    if (saved === 'en' || saved === 'zh-Hans') return saved
  } catch {
    // storage refused: the browser's languages decide
  }
  return navigator.languages.some((l) => /^zh(-(hans|cn|sg))?$/i.test(l) || /^zh-hans/i.test(l))
    ? 'zh-Hans'
    : 'en'
}

export function setLang(lang: Lang, remember: boolean): void {
  current = lang
  document.documentElement.lang = lang
  if (remember)
    try {
      localStorage.setItem(STORAGE_KEY, lang)
    } catch {
      // not remembered; fine
    }
}

export function t(key: Key, params: Record<string, string | number> = {}): string {
  const text = tables[current][key] ?? en[key]
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`))
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—'
  return (
    new Intl.DateTimeFormat(current, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(
      new Date(iso),
    ) + ' UTC'
  )
}

/** Prices and balances are kept in cents of the operator's currency, shown with two decimals. */
export function formatMoney(cents: number): string {
  if (cents === 0) return current === 'zh-Hans' ? '免费' : 'free'
  return new Intl.NumberFormat(current, { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(
    cents / 100,
  )
}

export function termOf(years: number): string {
  if (years === 0) return current === 'zh-Hans' ? '永久' : 'never expires'
  return current === 'zh-Hans' ? `${years} 年` : `${years} year${years === 1 ? '' : 's'}`
}

export function formatWait(seconds: number): string {
  if (current === 'zh-Hans') return seconds >= 60 ? `${Math.ceil(seconds / 60)} 分钟` : `${seconds} 秒`
  const m = Math.ceil(seconds / 60)
  return seconds >= 60 ? `${m} minute${m === 1 ? '' : 's'}` : `${seconds} second${seconds === 1 ? '' : 's'}`
}
