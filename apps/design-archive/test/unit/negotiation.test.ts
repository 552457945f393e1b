import { ifNoneMatchMatches, negotiateEncoding, notModifiedSince } from '../../src/http/negotiation.ts'

describe('negotiateEncoding', () => {
  it.each([
    [undefined, 'identity'],
    ['', 'identity'],
    ['gzip, deflate, br, zstd', 'br'],
    ['br, gzip', 'br'],
    ['gzip, br', 'br'],
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['GZIP', 'gzip'],
    ['deflate', 'identity'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.4, gzip;q=0.8', 'gzip'],
    ['br;q=0.8, gzip;q=0.8', 'br'],
    ['*', 'br'],
    ['*;q=0.5, br;q=0', 'gzip'],
    ['identity;q=1, gzip;q=0.5', 'identity'],
    ['br;q=0, gzip;q=0', 'identity'],
    ['br;q=nonsense', 'identity'],
    [' br ; q=1 , gzip ', 'br'],
  ])('when Accept-Encoding is %j, then %s', (header, expected) => {
    expect(negotiateEncoding(header)).toBe(expected)
  })
})

describe('ifNoneMatchMatches', () => {
  const etag = '"abc"'
  it.each([
    ['"abc"', true],
    ['W/"abc"', true],
    ['"x", "abc"', true],
    ['*', true],
    ['"abd"', false],
    ['abc', false],
    ['', false],
  ])('when If-None-Match is %j, then match is %s', (header, expected) => {
    expect(ifNoneMatchMatches(header, etag)).toBe(expected)
  })
})

describe('notModifiedSince', () => {
  const published = Date.parse('2026-11-20T08:30:15Z') / 1000
  it.each([
    ['Fri, 20 Nov 2026 08:30:15 GMT', true],
    ['Fri, 20 Nov 2026 09:00:00 GMT', true],
    ['Fri, 20 Nov 2026 08:30:14 GMT', false],
    ['yesterday', false],
  ])('when If-Modified-Since is %j, then not-modified is %s', (header, expected) => {
    expect(notModifiedSince(header, published)).toBe(expected)
  })
})
