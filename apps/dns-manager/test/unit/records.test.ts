import { ApiError } from '@quartet/core/errors'
import { normaliseHostname, normaliseLabel, normaliseRecordName } from '../../src/domain/names.ts'
import { validateRecord } from '../../src/domain/record-rules.ts'
import { bindZoneFile, rdataOf, splitTxt } from '../../src/domain/zone-file.ts'

const field = (f: () => unknown) => {
  try {
    f()
  } catch (err) {
    return (err as ApiError).details?.field
  }
  return 'no error'
}

describe('labels and names', () => {
  it('when a label is mixed case or IDN, then it is lowercased and punycoded', () => {
    expect(normaliseLabel('MyHost')).toBe('myhost')
    expect(normaliseLabel('bücher')).toBe('xn--bcher-kva')
    expect(normaliseLabel('a'.repeat(63))).toHaveLength(63)
  })

  it.each(['', '-a', 'a-', 'a'.repeat(64), 'a.b', 'a_b', 'a b'])(
    'when the label is %j, then it is refused',
    (label) => {
      expect(() => normaliseLabel(label)).toThrow(ApiError)
    },
  )

  it('when a record name is relative, @, a wildcard or fully qualified inside the subdomain, then it is normalised', () => {
    expect(normaliseRecordName('@', 'h.example.org')).toBe('@')
    expect(normaliseRecordName('WWW', 'h.example.org')).toBe('www')
    expect(normaliseRecordName('*.dev', 'h.example.org')).toBe('*.dev')
    expect(normaliseRecordName('_dmarc', 'h.example.org')).toBe('_dmarc')
    expect(normaliseRecordName('www.h.example.org.', 'h.example.org')).toBe('www')
    expect(field(() => normaliseRecordName('a.*', 'h.example.org'))).toBe('name')
    expect(field(() => normaliseRecordName('www.other.org.', 'h.example.org'))).toBe('name')
    expect(field(() => normaliseRecordName(`${'a'.repeat(63)}.`.repeat(4), 'h.example.org'))).toBe('name')
  })

  it('when a host name is single-label or too long, then it is refused', () => {
    expect(normaliseHostname('MX.Example.com.', 'content')).toBe('mx.example.com')
    expect(() => normaliseHostname('localhost', 'content')).toThrow(ApiError)
    expect(() => normaliseHostname(`${'a'.repeat(60)}.`.repeat(5) + 'com', 'content')).toThrow(ApiError)
  })
})

describe('record validation and rendering', () => {
  const fqdn = 'h.example.org'
  const opts = { allowPrivateAddresses: false }

  it('when private addresses are allowed by config, then 10.0.0.1 passes', () => {
    expect(
      validateRecord({ type: 'A', content: '10.0.0.1' }, fqdn, { allowPrivateAddresses: true }).content,
    ).toBe('10.0.0.1')
    expect(field(() => validateRecord({ type: 'A', content: '10.0.0.1' }, fqdn, opts))).toBe('content')
    expect(field(() => validateRecord({ type: 'A', content: '0.0.0.0' }, fqdn, opts))).toBe('content')
    expect(field(() => validateRecord({ type: 'A', content: '224.0.0.1' }, fqdn, opts))).toBe('content')
    expect(field(() => validateRecord({ type: 'AAAA', content: 'fe80::1' }, fqdn, opts))).toBe('content')
  })

  it('when records are rendered, then RDATA is in presentation format with trailing dots and quoted TXT', () => {
    const r = (input: Parameters<typeof validateRecord>[0]) => rdataOf(validateRecord(input, fqdn, opts))
    expect(r({ type: 'MX', content: 'mx.example.com', priority: 10 })).toBe('10 mx.example.com.')
    expect(
      r({ type: 'SRV', name: '_s._tcp', content: 't.example.com', priority: 1, weight: 2, port: 3 }),
    ).toBe('1 2 3 t.example.com.')
    expect(r({ type: 'CAA', content: 'ca.example', tag: 'issuewild', flag: 128 })).toBe(
      '128 issuewild "ca.example"',
    )
    expect(r({ type: 'TXT', content: 'say "hi" \\o/' })).toBe('"say \\"hi\\" \\\\o/"')
    expect(r({ type: 'CNAME', name: 'www', content: 'target.example.com' })).toBe('target.example.com.')
  })

  it('when TXT is split, then chunks are at most 255 bytes and never cut a UTF-8 character', () => {
    const chunks = splitTxt('é'.repeat(200))
    expect(chunks.every((c) => Buffer.byteLength(c) <= 255)).toBe(true)
    expect(chunks.join('')).toBe('é'.repeat(200))
    expect(splitTxt('a'.repeat(510))).toEqual(['a'.repeat(255), 'a'.repeat(255)])
  })

  it('when a zone file is built, then it has SOA, NS and the records sorted', () => {
    const text = bindZoneFile(
      fqdn,
      [validateRecord({ type: 'A', name: 'b', content: '8.8.8.8' }, fqdn, opts)],
      {
        nameservers: ['ns1.example.net'],
        serial: 42,
      },
    )
    expect(text).toBe(
      [
        '$ORIGIN h.example.org.',
        '$TTL 600',
        '@ 600 IN SOA ns1.example.net. hostmaster.h.example.org. 42 3600 600 1209600 60',
        '@ 600 IN NS ns1.example.net.',
        'b 600 IN A 8.8.8.8',
        '',
      ].join('\n'),
    )
  })
})
