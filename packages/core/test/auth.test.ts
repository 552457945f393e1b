import {
  generateToken,
  hashPassword,
  hashToken,
  ipAllowed,
  isValidCidrOrIp,
  maskToken,
  parseAllowList,
  parseBearer,
  parseKeyAndSecret,
  safeEqual,
  sameDigest,
  verifyPassword,
} from '../src/auth.ts'

describe('parseBearer', () => {
  it.each([
    ['no header', undefined],
    ['an empty header', ''],
    ['a header of spaces', '   '],
    ['the scheme with no token', 'Bearer'],
    ['the scheme with only spaces after it', 'Bearer    '],
  ])('when given %s, then the credential is missing', (_case, header) => {
    expect(parseBearer(header)).toEqual({ kind: 'missing' })
  })

  it.each([
    ['Basic', 'Basic dXNlcjpwYXNz'],
    ['Token', 'Token abc'],
    ['a bare token', 'sk-qk-v1-abc'],
    ['Bearer glued to the token', 'Bearerabc'],
  ])('when the scheme is %s, then it is the wrong scheme', (_case, header) => {
    expect(parseBearer(header)).toEqual({ kind: 'wrong_scheme' })
  })

  it.each(['Bearer tok_123', 'bearer tok_123', 'BEARER tok_123', 'BeArEr tok_123'])(
    'when the scheme is spelled %j, then the token is read (scheme is case-insensitive)',
    (header) => {
      expect(parseBearer(header)).toEqual({ kind: 'ok', token: 'tok_123' })
    },
  )

  it('when the header has spaces around and between scheme and token, then they are tolerated', () => {
    expect(parseBearer('   Bearer    tok_123   ')).toEqual({ kind: 'ok', token: 'tok_123' })
  })

  it('when the header is given twice (array), then the first value is used', () => {
    expect(parseBearer(['Bearer first', 'Bearer second'])).toEqual({ kind: 'ok', token: 'first' })
  })
})

describe('parseKeyAndSecret', () => {
  it('when X-API-Key and X-API-Secret are both sent, then they are returned', () => {
    expect(parseKeyAndSecret({ 'x-api-key': 'key_1', 'x-api-secret': 'sec_1' })).toEqual({
      key: 'key_1',
      secret: 'sec_1',
    })
  })

  it('when both header forms are sent, then the X-API-* headers win', () => {
    const headers = { 'x-api-key': 'key_1', 'x-api-secret': 'sec_1', authorization: 'Bearer other:pair' }

    expect(parseKeyAndSecret(headers)).toEqual({ key: 'key_1', secret: 'sec_1' })
  })

  it('when Authorization: Bearer KEY:SECRET is sent, then it is split at the colon', () => {
    expect(parseKeyAndSecret({ authorization: 'Bearer key_1:sec_1' })).toEqual({
      key: 'key_1',
      secret: 'sec_1',
    })
  })

  it('when the secret itself contains ":", then the split is at the first colon only', () => {
    expect(parseKeyAndSecret({ authorization: 'bearer key_1:se:c:1' })).toEqual({
      key: 'key_1',
      secret: 'se:c:1',
    })
  })

  it.each([
    ['only X-API-Key', { 'x-api-key': 'key_1' }],
    ['only X-API-Secret', { 'x-api-secret': 'sec_1' }],
    ['only X-API-Key, even with a Bearer pair', { 'x-api-key': 'key_1', authorization: 'Bearer a:b' }],
    ['an empty X-API-Secret', { 'x-api-key': 'key_1', 'x-api-secret': '  ' }],
    ['a Bearer token with no colon', { authorization: 'Bearer key_1' }],
    ['a Bearer token with nothing before the colon', { authorization: 'Bearer :sec_1' }],
    ['a Bearer token with nothing after the colon', { authorization: 'Bearer key_1:' }],
    ['a Basic credential', { authorization: 'Basic a2V5OnNlYw==' }],
    ['no headers at all', {}],
  ])('when given %s, then the result is null', (_case, headers) => {
    expect(parseKeyAndSecret(headers)).toBeNull()
  })
})

describe('sameDigest', () => {
  it('when two digests are compared, then only the same digest is equal, and another length is not', () => {
    const digest = hashToken('s3cr3t-value')
    expect(sameDigest(digest, hashToken('s3cr3t-value'))).toBe(true)
    expect(sameDigest(digest, hashToken('s3cr3t-valuf'))).toBe(false)
    expect(sameDigest(digest, digest.slice(0, -1))).toBe(false)
    expect(sameDigest(digest, '')).toBe(false)
  })
})

describe('safeEqual', () => {
  it('when the strings are equal, then it is true', () => {
    expect(safeEqual('s3cr3t-value', 's3cr3t-value')).toBe(true)
  })

  it('when the strings differ in one character, then it is false', () => {
    expect(safeEqual('s3cr3t-value', 's3cr3t-valuf')).toBe(false)
  })

  it.each([
    ['abc', 'abcd'],
    ['', 'a'],
    ['a-long-secret', 'a'],
  ])('when the lengths differ (%j vs %j), then it is false without throwing', (a, b) => {
    expect(() => safeEqual(a, b)).not.toThrow()
    expect(safeEqual(a, b)).toBe(false)
  })

  it('when both are empty, then it is true', () => {
    expect(safeEqual('', '')).toBe(true)
  })
})

describe('tokens', () => {
  it('when a token is generated, then it is the prefix plus 64 hex characters (256 bits)', () => {
    expect(generateToken('sk-qk-v1-')).toMatch(/^sk-qk-v1-[0-9a-f]{64}$/)
  })

  it('when a token is generated with 16 bytes, then it has 32 hex characters after the prefix', () => {
    expect(generateToken('pk_', 16)).toMatch(/^pk_[0-9a-f]{32}$/)
  })

  it('when fewer than 128 bits are asked for, then it refuses', () => {
    expect(() => generateToken('x_', 15)).toThrow(/128 bits/)
  })

  it('when 1000 tokens are generated, then they are all distinct', () => {
    const tokens = new Set(Array.from({ length: 1000 }, () => generateToken('t_')))

    expect(tokens.size).toBe(1000)
  })

  it('when "abc" is hashed, then it is the SHA-256 test vector in hex', () => {
    expect(hashToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it('when a prefixed token is masked, then prefix, first 3 and last 3 characters remain', () => {
    const token = `sk-qk-v1-0e6${'a'.repeat(58)}1c9`

    expect(maskToken(token)).toBe('sk-qk-v1-0e6...1c9')
  })

  it('when a token without a dash is masked, then only the ends of the body remain', () => {
    expect(maskToken('abcdef0123456789')).toBe('abc...789')
  })

  it('when the body is too short to mask, then it is fully starred', () => {
    expect(maskToken('sk-abc123')).toBe('sk-******')
  })
})

describe('passwords', () => {
  it('when the right password is checked against its hash, then it verifies', async () => {
    const stored = await hashPassword('correct horse battery staple')

    expect(stored).toMatch(/^scrypt\$\d+\$\d+\$\d+\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/)
    await expect(verifyPassword('correct horse battery staple', stored)).resolves.toBe(true)
  })

  it('when a wrong password is checked, then it does not verify', async () => {
    const stored = await hashPassword('correct horse battery staple')

    await expect(verifyPassword('correct horse battery stapler', stored)).resolves.toBe(false)
  })

  it('when the same password is hashed twice, then the hashes differ (random salt)', async () => {
    const [a, b] = await Promise.all([hashPassword('pw'), hashPassword('pw')])

    expect(a).not.toBe(b)
  })

  it.each([
    ['an empty string', ''],
    ['a bcrypt hash', '$2b$10$abcdefghijklmnopqrstuuJ0fQ0k3j3Jb0b0b0b0b0b0b0b0b0b0b'],
    ['too few fields', 'scrypt$32768$8$1$c2FsdA'],
    ['non-numeric parameters', 'scrypt$big$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA'],
    ['an N that is not a power of two', 'scrypt$1000$8$1$c2FsdHNhbHRzYWx0$aGFzaGhhc2hoYXNoaGFzaA'],
    ['an empty hash part', 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0$'],
    ['an empty salt', 'scrypt$16384$8$1$$aGFzaGhhc2hoYXNoaGFzaA'],
  ])(
    'when the stored hash is malformed (%s), then verification is false, not an error',
    async (_case, stored) => {
      await expect(verifyPassword('any password', stored)).resolves.toBe(false)
    },
  )
})

describe('ipAllowed', () => {
  it('when the allow list is empty, then every address is allowed', () => {
    expect(ipAllowed('203.0.113.9', [])).toBe(true)
  })

  it.each([
    ['10.1.2.3', true],
    ['10.255.255.255', true],
    ['11.0.0.1', false],
    ['192.168.1.1', false],
  ])('when the rule is the IPv4 CIDR 10.0.0.0/8 and the client is %s, then allowed is %s', (ip, allowed) => {
    expect(ipAllowed(ip, ['10.0.0.0/8'])).toBe(allowed)
  })

  it.each([
    ['2001:db8::1', true],
    ['2001:db8:ffff::1', true],
    ['2001:db9::1', false],
    ['::1', false],
  ])(
    'when the rule is the IPv6 CIDR 2001:db8::/32 and the client is %s, then allowed is %s',
    (ip, allowed) => {
      expect(ipAllowed(ip, ['2001:db8::/32'])).toBe(allowed)
    },
  )

  it('when an IPv4-mapped IPv6 client meets an IPv4 rule, then it is treated as the IPv4 address', () => {
    expect(ipAllowed('::ffff:192.0.2.10', ['192.0.2.0/24'])).toBe(true)
    expect(ipAllowed('::ffff:198.51.100.1', ['192.0.2.0/24'])).toBe(false)
  })

  it('when the rule is written as IPv4-mapped IPv6, then a plain IPv4 client matches it', () => {
    expect(ipAllowed('192.0.2.10', ['::ffff:192.0.2.0/120'])).toBe(true)
    expect(ipAllowed('192.0.3.10', ['::ffff:192.0.2.0/120'])).toBe(false)
  })

  it('when a mapped rule is wider than the mapped block (/90), then it does not allow every IPv4 address', () => {
    expect(ipAllowed('8.8.8.8', ['::ffff:0:0/90'])).toBe(false)
  })

  it('when an IPv4 client meets only an IPv6 rule, then it is refused', () => {
    expect(ipAllowed('10.0.0.1', ['2001:db8::/32'])).toBe(false)
  })

  it('when the rules are single addresses, then only those exact addresses are allowed', () => {
    const rules = ['203.0.113.7', '2001:db8::7']

    expect(ipAllowed('203.0.113.7', rules)).toBe(true)
    expect(ipAllowed('::ffff:203.0.113.7', rules)).toBe(true)
    expect(ipAllowed('2001:db8::7', rules)).toBe(true)
    expect(ipAllowed('2001:db8:0:0:0:0:0:7', rules)).toBe(true)
    expect(ipAllowed('203.0.113.8', rules)).toBe(false)
    expect(ipAllowed('2001:db8::8', rules)).toBe(false)
  })

  it('when the list is pre-parsed, then it matches like the string list', () => {
    const parsed = parseAllowList(['10.0.0.0/8', '2001:db8::/32'])

    expect(ipAllowed('10.9.9.9', parsed)).toBe(true)
    expect(ipAllowed('2001:db8::9', parsed)).toBe(true)
    expect(ipAllowed('172.16.0.1', parsed)).toBe(false)
  })

  it.each([undefined, '', 'not-an-ip', '10.0.0.256', '2001:db8::g', '10.0.0.0/8'])(
    'when the client address is garbage (%j) and the list is not empty, then it is refused',
    (ip) => {
      expect(ipAllowed(ip, ['0.0.0.0/0', '::/0'])).toBe(false)
    },
  )

  it('when a rule is garbage, then parsing throws naming the bad entry', () => {
    expect(() => parseAllowList(['10.0.0.0/8', '10.0.0.0/33'])).toThrow(
      '"10.0.0.0/33" is not an IP address or CIDR range',
    )
    expect(() => ipAllowed('10.0.0.1', ['office-network'])).toThrow(/office-network/)
    expect(isValidCidrOrIp('nope')).toBe(false)
    expect(isValidCidrOrIp('2001:db8::/48')).toBe(true)
  })
})
