/**
 * The language machinery both services' pages share: which language to show (the remembered
 * choice, else the browser's languages), the text of a key with its `{name}` parameters, and
 * the formats that read the same in every page. The texts themselves stay in each app.
 */

/** `{name}` in a text replaced by its parameter; a parameter not given stays as `{name}`. */
export function interpolate(text: string, params: Record<string, string | number> = {}): string {
  return text.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? `{${name}}`))
}

export interface LanguageOptions<L extends string, K extends string> {
  /** Every language's texts; a key missing from one falls back to `fallback`'s. */
  tables: Record<L, Record<K, string>>
  fallback: L
  /** Where the person's choice is remembered (localStorage). */
  storageKey: string
  /** The language for the browser's preferred languages (`navigator.languages`), in order. */
  fromBrowser: (languages: readonly string[]) => L
}

export interface Language<L extends string, K extends string> {
  /** The remembered choice, else the browser's. */
  initialLang(): L
  /** Shows `lang` from now on (and as the document's `lang`); `remember` keeps it for next time. */
  setLang(lang: L, remember: boolean): void
  /** The language shown. */
  lang(): L
  /** The text of `key` in the language shown, its parameters filled in. */
  t(key: K, params?: Record<string, string | number>): string
}

export function createLanguage<L extends string, K extends string>(
  options: LanguageOptions<L, K>,
): Language<L, K> {
  const { tables, fallback, storageKey } = options
  let current = fallback
  return {
    initialLang() {
      try {
        const saved = localStorage.getItem(storageKey)
        if (saved !== null && Object.hasOwn(tables, saved)) return saved as L
      } catch {
        // storage refused: the browser's languages decide
      }
      return options.fromBrowser(navigator.languages ?? [navigator.language])
    },
    setLang(lang, remember) {
      current = lang
      document.documentElement.lang = lang
      if (remember)
        try {
          localStorage.setItem(storageKey, lang)
        } catch {
          // not remembered; fine
        }
    },
    lang: () => current,
    t: (key, params) => interpolate(tables[current][key] ?? tables[fallback][key], params),
  }
}

/** Whether a language tag is Chinese (`zh`, `zh-CN`, `zh-Hans` …). */
export const isChinese = (locale: string) => /^zh(-|$)/i.test(locale)

/** English's two forms: `1 minute`, `2 minutes`. */
export const englishCount = (count: number, unit: string, shown: string = String(count)) =>
  `${shown} ${unit}${count === 1 ? '' : 's'}`

/** How long to wait before trying again, in whole minutes from a minute on, else in seconds. */
export function formatWait(seconds: number, locale: string): string {
  const number = new Intl.NumberFormat(locale)
  const minutes = Math.ceil(seconds / 60)
  if (isChinese(locale))
    return seconds >= 60 ? `${number.format(minutes)} 分钟` : `${number.format(seconds)} 秒`
  return seconds >= 60
    ? englishCount(minutes, 'minute', number.format(minutes))
    : englishCount(seconds, 'second', number.format(seconds))
}

/**
 * A moment as date and time (`medium` date, `short` time) in the language shown; `utc` shows it
 * in UTC and says so. No moment gives `empty`.
 */
export function formatDateTime(
  iso: string | null | undefined,
  locale: string,
  options: { utc?: boolean; empty?: string } = {},
): string {
  if (!iso) return options.empty ?? '—'
  const format = new Intl.DateTimeFormat(locale, {
    dateStyle: 'medium',
    timeStyle: 'short',
    ...(options.utc ? { timeZone: 'UTC' } : {}),
  })
  return format.format(new Date(iso)) + (options.utc ? ' UTC' : '')
}
