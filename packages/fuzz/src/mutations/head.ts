import fc from 'fast-check'
import { type Draft, type Mutation, mutation, setHeader } from '../draft.ts'
import { nastyUrlPiece } from '../strings.ts'
import { short } from './short.ts'

/** Latin-1 text for a header value: bytes ≥ 0x80 go out raw, so a value can be invalid UTF-8. */
const bytes = (...codes: number[]) => String.fromCharCode(...codes)

/** Header values that are wrong in form, size or encoding, but still a valid HTTP message. */
const oddHeaderValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'null',
    'undefined',
    '*',
    ',,,',
    ';;;',
    '=',
    bytes(0xff, 0xfe),
    `caf${bytes(0xc3)}`,
    bytes(0xed, 0xa0, 0x80),
    'é',
    '\t',
    'a'.repeat(8000),
    '../../../',
  ),
  fc.string({ unit: 'grapheme-ascii', maxLength: 60 }),
)

/** Content types a client gets wrong. */
const contentTypes = fc.constantFrom(
  undefined,
  '',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=nonsense',
  'application/json; charset="utf-8"',
  'application/json;;;',
  'application/vnd.api+json',
  'application/merge-patch+json',
  'application/json, text/plain',
  'APPLICATION/JSON',
  '*/*',
  'json',
  `application/json; x=${bytes(0xff)}`,
)

/** Methods other than the operation's: the usual ones, WebDAV's, and tokens nobody defined. */
const methods = fc.constantFrom(
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
  'TRACE',
  'PROPFIND',
  'MKCOL',
  'LOCK',
  'PURGE',
  'SEARCH',
  'QUERY',
  'REPORT',
  'LINK',
)

const hosts = fc.constantFrom<string | null>(
  null,
  '',
  ' ',
  'evil.example',
  'evil.example:99999',
  '127.0.0.1:0',
  '[::1',
  '[::1]:abc',
  '::1',
  'a..b',
  '-',
  '_',
  '%00',
  'localhost:3000, evil.example',
  'a'.repeat(300),
  'x.'.repeat(200),
  `h${bytes(0xe9)}`,
  bytes(0xff, 0xfe),
  'ünïcode.example',
  'user@host',
  'host/path',
  'host?query',
  'host#frag',
)

const requestIds = fc.constantFrom(
  '',
  'a'.repeat(2000),
  '../../x',
  '<script>',
  bytes(0xff),
  '\t',
  '0',
  'req-1, req-2',
)

const forwardedFor = fc.constantFrom(
  'garbage',
  '1.2.3.4, garbage',
  '999.999.999.999',
  '::ffff:1.2.3.4',
  '[::1]',
  '2001:db8::1',
  'unknown',
  '',
  ',',
  '1.2.3.4:5678',
  '1.2.3.4, '.repeat(500),
  'fe80::1%eth0',
)

const ranges = fc.constantFrom(
  'bytes=0-1',
  'bytes=0-',
  'bytes=-1',
  'bytes=5-1',
  'bytes=abc',
  'bytes=',
  'bytes=0-0,1-1,2-2,3-3,4-4,5-5,6-6,7-7,8-8,9-9,10-10',
  'bytes=99999999999999999999-',
  'items=0-1',
  'bytes=0-1, bytes=2-3',
  '',
  'bytes=-0',
)

/** Mutations of the head of any request: methods, Host, headers of every kind, the target's shape. */
export function headMutations(credentialHeaders: readonly string[]): fc.Arbitrary<Mutation> {
  return fc.oneof(
    methods.map((m) => mutation(`method ${m}`, (d) => ({ ...d, method: m }))),
    hosts.map((h) => mutation(`Host ${JSON.stringify(h)}`, (d) => ({ ...d, host: h }))),
    contentTypes.map((ct) =>
      mutation(`Content-Type ${JSON.stringify(ct)}`, (d) => setHeader(d, 'Content-Type', ct)),
    ),
    fc
      .tuple(
        fc.constantFrom(
          'Accept',
          'Accept-Encoding',
          'Accept-Language',
          'Accept-Charset',
          'If-None-Match',
          'If-Modified-Since',
          'If-Match',
          'If-Range',
          'Cache-Control',
          'Origin',
          'Referer',
          'User-Agent',
          'Cookie',
          'Expect',
          'Upgrade',
          'TE',
          'Content-Encoding',
          'Content-Language',
          'X-Requested-With',
          'X-Forwarded-Proto',
          'X-Forwarded-Host',
          'Forwarded',
          'Access-Control-Request-Method',
          'Access-Control-Request-Headers',
          ...credentialHeaders,
        ),
        oddHeaderValue,
      )
      .map(([name, value]) => mutation(`${name}: ${short(value)}`, (d) => setHeader(d, name, value))),
    fc
      .constantFrom(
        ['Accept', 'text/html'],
        ['Accept', 'application/xml'],
        ['Accept', 'application/json;q=0'],
        ['Accept-Encoding', 'gzip;q=bad, br;q=2, *'],
        ['Accept-Encoding', 'zstd, compress, identity;q=0'],
        ['If-None-Match', '*'],
        ['If-None-Match', 'W/"x", "y"'],
        ['If-Modified-Since', 'Tue, 01 Jan 3000 00:00:00 GMT'],
        ['If-Modified-Since', 'yesterday'],
        ['Expect', '100-continue'],
        ['Content-Encoding', 'gzip'],
        ['Content-Encoding', 'br'],
        ['Origin', 'https://evil.example'],
        ['Origin', 'null'],
        ['Cookie', 'qps_session=; qps_session=x'],
        ['Cookie', `qps_session=${'%'.repeat(20)}`],
        ['Cookie', 'a=b; =c; ;;'],
      )
      .map(([n, v]) => mutation(`${n}: ${v}`, (d) => setHeader(d, n, v))),
    ranges.map((r) => mutation(`Range: ${r}`, (d) => setHeader(d, 'Range', r))),
    requestIds.map((v) => mutation(`X-Request-Id: ${short(v)}`, (d) => setHeader(d, 'X-Request-Id', v))),
    forwardedFor.map((v) =>
      mutation(`X-Forwarded-For: ${short(v)}`, (d) => setHeader(d, 'X-Forwarded-For', v)),
    ),
    fc
      .constantFrom(...credentialHeaders)
      .map((name) => mutation(`duplicate ${name}`, (d) => duplicateHeader(d, name))),
    fc
      .constantFrom(...credentialHeaders)
      .map((name) => mutation(`no ${name}`, (d) => setHeader(d, name, undefined))),
    fc.constant(mutation('body sent chunked', (d) => (d.body ? { ...d, chunked: true } : d))),
    fc.integer({ min: 50, max: 120 }).map((n) =>
      mutation(`${n} extra headers`, (d) => ({
        ...d,
        headers: [
          ...d.headers,
          ...Array.from({ length: n }, (_, i): [string, string] => [`X-Fuzz-${i}`, 'v']),
        ],
      })),
    ),
    targetShapes,
  )
}

const targetShapes: fc.Arbitrary<Mutation> = fc.oneof(
  fc.constant(mutation('trailing slash', (d) => ({ ...d, path: `${d.path}/` }))),
  fc.constant(mutation('double slashes', (d) => ({ ...d, path: d.path.replaceAll('/', '//') }))),
  fc.constant(mutation('upper-case path', (d) => ({ ...d, path: d.path.toUpperCase() }))),
  fc.constant(mutation('dot segments', (d) => ({ ...d, path: d.path.replace(/\/([^/]*)$/, '/./x/../$1') }))),
  fc.constant(mutation('encoded slashes', (d) => ({ ...d, path: d.path.replace(/\/([^/]*)$/, '%2F$1') }))),
  fc.constant(mutation('matrix parameter', (d) => ({ ...d, path: `${d.path};jsessionid=1` }))),
  nastyUrlPiece.map((p) => mutation(`extra segment ${short(p)}`, (d) => ({ ...d, path: `${d.path}/${p}` }))),
  fc.constant(mutation('absolute-form target', (d) => ({ ...d, target: `http://evil.example${d.path}` }))),
  fc.constant(mutation('asterisk target', (d) => ({ ...d, target: '*' }))),
  fc.constant(mutation('fragment in target', (d) => ({ ...d, path: `${d.path}#frag` }))),
  fc.constant(mutation('empty query', (d) => ({ ...d, path: `${d.path}?` }))),
)

function duplicateHeader(d: Draft, name: string): Draft {
  const found = d.headers.find(([n]) => n.toLowerCase() === name.toLowerCase())
  return { ...d, headers: [...d.headers, [name, found ? `${found[1]}x` : 'x']] }
}
