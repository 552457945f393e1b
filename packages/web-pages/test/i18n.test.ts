import {
  createLanguage,
  englishCount,
  formatDateTime,
  formatWait,
  interpolate,
  isChinese,
} from '../src/i18n.ts'

describe('texts', () => {
  it('when a text has {name} parameters, then each given one is filled in and a missing one stays', () => {
    expect(interpolate('{count} of {total} from {who}', { count: 3, total: '5' })).toBe('3 of 5 from {who}')
    expect(interpolate('no parameters')).toBe('no parameters')
  })

  it('when a key is missing from the language shown, then the fallback language gives it', () => {
    const tables = {
      en: { hi: 'Hello {name}', bye: 'Bye' },
      de: { hi: 'Hallo {name}' } as { hi: string; bye: string },
    }
    const language = createLanguage({
      tables,
      fallback: 'en',
      storageKey: 'test.lang',
      fromBrowser: () => 'en',
    })
    expect(language.lang()).toBe('en')
    expect(language.t('hi', { name: 'Ann' })).toBe('Hello Ann')
    expect(language.t('bye')).toBe('Bye')
  })
})

describe('formats', () => {
  it('when a language tag is Chinese in any script or region, then isChinese says so; others not', () => {
    expect(['zh', 'zh-CN', 'zh-Hans', 'ZH-tw'].map(isChinese)).toEqual([true, true, true, true])
    expect(['en', 'zhx', 'de-zh'].map(isChinese)).toEqual([false, false, false])
  })

  it('when English counts one or more, then the unit has its plural form', () => {
    expect([englishCount(1, 'year'), englishCount(0, 'year'), englishCount(2, 'year')]).toEqual([
      '1 year',
      '0 years',
      '2 years',
    ])
    expect(englishCount(1200, 'minute', '1,200')).toBe('1,200 minutes')
  })

  it('when a wait is under a minute, then in seconds; from a minute on, in whole minutes rounded up', () => {
    expect(formatWait(1, 'en')).toBe('1 second')
    expect(formatWait(59, 'en')).toBe('59 seconds')
    expect(formatWait(60, 'en')).toBe('1 minute')
    expect(formatWait(61, 'en')).toBe('2 minutes')
    expect(formatWait(30, 'zh-CN')).toBe('30 秒')
    expect(formatWait(120, 'zh-Hans')).toBe('2 分钟')
  })

  it('when a moment is shown in UTC, then it says UTC; without a moment, the empty text', () => {
    // ICU versions differ in the space before AM (a narrow no-break space in newer ones).
    expect(formatDateTime('2026-03-04T05:06:00Z', 'en', { utc: true })).toMatch(/^Mar 4, 2026, 5:06\sAM UTC$/)
    expect(formatDateTime('2026-03-04T05:06:00Z', 'zh-Hans', { utc: true })).toMatch(
      /^2026年3月4日.*05:06 UTC$/,
    )
    expect(formatDateTime(null, 'en')).toBe('—')
    expect(formatDateTime(undefined, 'en', { empty: 'never' })).toBe('never')
  })

  it("when a moment is shown without utc, then in the reader's time zone and without a zone name", () => {
    const iso = '2026-03-04T05:06:00Z'
    const local = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' }).format(
      new Date(iso),
    )
    expect(formatDateTime(iso, 'en')).toBe(local)
  })
})
