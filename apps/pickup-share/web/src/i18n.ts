import { createLanguage, formatDateTime, formatWait as sharedFormatWait } from '@quartet/web-pages/i18n'
import { en, type Key } from './i18n-en.ts'
import { zh } from './i18n-zh-cn.ts'

export type { Key } from './i18n-en.ts'

/** English and Simplified Chinese. The browser's languages choose by default; the switch is remembered. */
export type Lang = 'en' | 'zh-CN'

const tables: Record<Lang, Record<Key, string>> = { en, 'zh-CN': zh }
const language = createLanguage({
  tables,
  fallback: 'en',
  storageKey: 'pickup-share.lang',
  // The first of the browser's languages that the pages have decides.
  fromBrowser: (languages) => {
    for (const l of languages) {
      const lower = l.toLowerCase()
      if (lower.startsWith('zh')) return 'zh-CN'
      if (lower.startsWith('en')) return 'en'
    }
    return 'en'
  },
})

export const { initialLang, setLang, lang, t } = language

export const LANGS: Array<{ id: Lang; label: string }> = [
  { id: 'en', label: 'English' },
  { id: 'zh-CN', label: '简体中文' },
]

const UNITS = ['B', 'KB', 'MB', 'GB', 'TB']

/** A duration in seconds, rounded up, as the reader's language writes it: `45 s`, `3 min 5 s`, `2 h 10 min`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds))
  const zh = lang() === 'zh-CN'
  const [h, m, sec] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60]
  if (zh) return h ? `${h} 小时 ${m} 分` : m ? `${m} 分 ${sec} 秒` : `${sec} 秒`
  return h ? `${h} h ${m} min` : m ? `${m} min ${sec} s` : `${sec} s`
}

export function formatBytes(bytes: number): string {
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1
  return `${new Intl.NumberFormat(lang(), { maximumFractionDigits: digits }).format(value)} ${UNITS[unit]}`
}

export const formatDate = (iso: string | null | undefined): string =>
  formatDateTime(iso, lang(), { empty: t('common.never') })

export function formatPercent(part: number, whole: number): string {
  return new Intl.NumberFormat(lang(), { style: 'percent', maximumFractionDigits: 1 }).format(
    whole > 0 ? part / whole : 0,
  )
}

export const formatWait = (seconds: number): string => sharedFormatWait(seconds, lang())

/** The messages of a language (tests check that every server error code has one in each). */
export const messagesOf = (l: Lang): Readonly<Record<Key, string>> => tables[l]
