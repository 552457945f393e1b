import {
  asciiFallbackName,
  choosePathname,
  downloadName,
  safeContentType,
  ZFileName,
} from '../../src/domain/filenames.ts'

describe('file names', () => {
  it.each(['report.pdf', '报告 2026.xlsx', '🎉.zip', 'say "hi".txt', '.hidden', 'a'.repeat(255)])(
    'when the name is %j, then it is accepted',
    (name) => expect(ZFileName.safeParse(name).success).toBe(true),
  )

  it.each(['', ' ', '.', '..', 'a/b', 'a\\b', 'a\rb', 'a\nb', 'a\u0000b', 'a\u0085b', 'é'.repeat(128)])(
    'when the name is %j, then it is refused',
    (name) => expect(ZFileName.safeParse(name).success).toBe(false),
  )

  it('when a pathname is chosen, then it is 128 random bits and a safe ASCII form of the name', () => {
    expect(choosePathname('My Report (final).pdf')).toMatch(/^[0-9a-f]{32}\/My_Report_final_\.pdf$/)
    expect(choosePathname('..')).toMatch(/^[0-9a-f]{32}\/file$/)
    expect(choosePathname('报告.pdf')).toMatch(/^[0-9a-f]{32}\/pdf$/)
    expect(choosePathname('a.txt')).not.toBe(choosePathname('a.txt'))
  })

  it('when a download name has bidi controls, then they are removed', () => {
    expect(downloadName('invoice\u202Efdp.exe')).toBe('invoicefdp.exe')
    expect(downloadName('\u200F')).toBe('download')
  })

  it.each([
    ['text/html', 'application/octet-stream'],
    ['image/svg+xml', 'application/octet-stream'],
    ['application/javascript', 'application/octet-stream'],
    ['text/xml', 'application/octet-stream'],
    ['IMAGE/PNG', 'image/png'],
    ['text/plain; charset=utf-8', 'text/plain'],
    ['application/pdf', 'application/pdf'],
  ])('when the declared type is %s, then the download type is %s', (type, expected) => {
    expect(safeContentType(type)).toBe(expected)
  })

  it.each([
    ['café.txt', 'cafe.txt'],
    ['Ångström résumé.pdf', 'Angstrom resume.pdf'],
    ['报告.pdf', '__.pdf'],
    ['🎉.zip', '_.zip'],
    ['50% off.txt', '50_ off.txt'],
    ['plain-name.txt', 'plain-name.txt'],
  ])('when the download name is %j, then its ASCII fallback is %j', (name, fallback) =>
    expect(asciiFallbackName(name)).toBe(fallback),
  )
})
