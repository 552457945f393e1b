/// <reference lib="dom" />
// The web modules (errors, i18n) are browser code: their DOM globals are only named, never used, here.
import { coreErrorStatus } from '@quartet/core/errors'
import { shareErrorStatus } from '../../src/domain/errors.ts'
import { ERROR_CODES } from '../../web/src/errors.ts'
import { LANGS, messagesOf } from '../../web/src/i18n.ts'

// Issue 20 item 6: every error code the server can answer with has a message of its own in the
// page's languages (the server's English text is only ever a detail).
describe('the pages translate every server error code', () => {
  const serverCodes = [...Object.keys(coreErrorStatus), ...Object.keys(shareErrorStatus)]

  it('when the server has an error code, then the pages list it', () => {
    expect(serverCodes.filter((c) => !(ERROR_CODES as readonly string[]).includes(c))).toEqual([])
  })

  it.each(LANGS.map((l) => l.id))(
    'when the page is in %s, then each code has a non-empty message',
    (lang) => {
      const messages = messagesOf(lang) as Record<string, string | undefined>
      const missing = ERROR_CODES.filter((c) => !messages[`error.${c}`]?.trim())
      expect(missing).toEqual([])
    },
  )

  it('when English and Chinese messages are compared, then none of the Chinese ones is the English text', () => {
    const en = messagesOf('en') as Record<string, string>
    const zh = messagesOf('zh-CN') as Record<string, string>
    expect(ERROR_CODES.filter((c) => zh[`error.${c}`] === en[`error.${c}`])).toEqual([])
  })
})
