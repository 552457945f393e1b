import { acceptsEncoding } from '../src/web.ts'

describe('acceptsEncoding (the precompressed pages)', () => {
  it.each([
    ['gzip, deflate, br', 'br', true],
    ['gzip, deflate, br', 'gzip', true],
    ['br;q=0.5, gzip;q=1.0', 'br', true],
    ['br;q=0, gzip', 'br', false],
    ['br;q=0.000', 'br', false],
    ['BR', 'br', true],
    ['identity', 'gzip', false],
    ['', 'br', false],
    [undefined, 'br', false],
    ['gzip-like', 'gzip', false],
  ])('when Accept-Encoding is %j, then %s is taken: %s', (header, encoding, expected) => {
    expect(acceptsEncoding(header, encoding)).toBe(expected)
  })
})
