import fc from 'fast-check'

/**
 * Strings a hostile or careless client sends: control characters, NUL, lone surrogates,
 * characters outside the BMP, right-to-left overrides, path and markup tricks, numbers that do
 * not fit, and sizes far past any column.
 */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 3 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 40 }), weight: 3 },
  {
    arbitrary: fc.constantFrom(
      '',
      ' ',
      '\u0000',
      'a\u0000b',
      '\uD800',
      'x\uDC00y',
      '\uFFFF',
      '\uFEFF',
      '\u202Eevil',
      '\r\nX-Injected: 1',
      '../../etc/passwd',
      '..\\..\\windows',
      '%00',
      '%',
      '<script>alert(1)</script>',
      "' OR 1=1 --",
      '${jndi:ldap://x}',
      '{{7*7}}',
      '__proto__',
      'constructor',
      'null',
      'true',
      '-1',
      '0',
      '1e309',
      '99999999999999999999999',
      '9223372036854775808',
      '2147483648',
      '-2147483649',
      '9999999999',
      'NaN',
      // A timestamp JavaScript reads and Postgres has no year for, and the last one it has.
      '0000-06-01T00:00:00Z',
      '9999-12-31T23:59:59.999Z',
      '0x10',
      'café.txt',
      '文件.txt',
      '😀'.repeat(10),
    ),
    weight: 4,
  },
  { arbitrary: fc.integer({ min: 256, max: 70_000 }).map((n) => 'a'.repeat(n)), weight: 1 },
  { arbitrary: fc.integer({ min: 100, max: 20_000 }).map((n) => 'é😀'.repeat(n)), weight: 1 },
)

/** A value of any JSON type, nasty strings included. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  nastyString,
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    Number.MAX_SAFE_INTEGER + 2,
    -0,
    1e300,
    2 ** 31,
    2 ** 63,
    // Numeric extremes: the largest and smallest doubles, past every integer column, 1e21 (the
    // first number JSON.stringify writes with an exponent).
    Number.MAX_VALUE,
    -Number.MAX_VALUE,
    Number.MIN_VALUE,
    -(2 ** 63) - 4096,
    2 ** 64,
    1e21,
  ),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.oneof(fc.integer(), nastyString), { maxLength: 4 }),
  fc.dictionary(nastyString, fc.oneof(fc.integer(), nastyString), { maxKeys: 3 }),
)

/** Characters percent-encoded for a URL, except where the point is to send them raw. */
export const pct = (s: string) => encodeURIComponent(s)

/**
 * Query or path values as bytes on the wire: nasty strings properly encoded, and encodings that
 * are themselves wrong (a lone `%`, `%zz`, bytes that are not UTF-8, an encoded surrogate).
 */
export const nastyUrlPiece: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: nastyString.map(safeEncode), weight: 4 },
  {
    arbitrary: fc.constantFrom(
      '%',
      '%zz',
      '%ff',
      '%c3%28',
      '%ed%a0%80',
      '%f4%90%80%80',
      '%00',
      '%2e%2e',
      '%2f',
      '..',
      '.',
      '%252e',
      '%u0041',
      '+',
      '%20',
      'a%2Fb',
    ),
    weight: 3,
  },
  { arbitrary: fc.integer({ min: 1000, max: 12_000 }).map((n) => 'z'.repeat(n)), weight: 1 },
)

/** encodeURIComponent throws on a lone surrogate; encode its UTF-16 code unit as WTF-8 bytes then. */
export function safeEncode(s: string): string {
  try {
    return encodeURIComponent(s)
  } catch {
    let out = ''
    for (const ch of s) {
      const code = ch.charCodeAt(0)
      if (ch.length === 1 && code >= 0xd800 && code <= 0xdfff)
        out += `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`
      else out += encodeURIComponent(ch)
    }
    return out
  }
}
