import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const countRows = async () => ({
  issued: await deps.db.issuedUpload.count(),
  shares: await deps.db.share.count(),
})

describe('upload permission: bad input is a 400 that writes nothing', () => {
  it.each([
    ['CR/LF', 'evil\r\nSet-Cookie: x=1.txt'],
    ['NUL', 'a\u0000b.txt'],
    ['a tab', 'a\tb.txt'],
    ['DEL', 'a\u007fb.txt'],
    ['a slash', '../etc/passwd'],
    ['a backslash', '..\\windows\\win.ini'],
    ['dot-dot', '..'],
    ['an empty name', ''],
    ['more than 255 bytes', `${'é'.repeat(128)}.txt`],
  ])('when the name has %s, then 400 bad_request', async (_what, name) => {
    const before = await countRows()
    const res = await api(h, 'POST', '/api/upload', { store: 'blob', name, size: 10, type: 'text/plain' })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('bad_request')
    expect(res.body.error.message).toMatch(/^body\.name: /)
    expect(res.body.error.request_id).toEqual(expect.any(String))
    expect(await countRows()).toEqual(before)
  })

  it.each([
    [{ store: 'ftp', name: 'a.txt', size: 1, type: 'text/plain' }, 'body.store'],
    [{ store: 'blob', name: 'a.txt', size: -1, type: 'text/plain' }, 'body.size'],
    [{ store: 'blob', name: 'a.txt', size: 1.5, type: 'text/plain' }, 'body.size'],
    [{ store: 'blob', name: 'a.txt', size: 1, type: 'text/plain\r\nX: y' }, 'body.type'],
    [{ store: 'blob', name: 'a.txt', size: 1, type: 'text/plain', extra: 1 }, 'body'],
  ])('when the request is %j, then 400 names %s', async (body, field) => {
    const res = await api(h, 'POST', '/api/upload', body)
    expect(res.status).toBe(400)
    expect(res.body.error.message.startsWith(field)).toBe(true)
  })

  it('when the bucket store is not configured, then 400 store_unavailable', async () => {
    const res = await api(h, 'POST', '/api/upload', {
      store: 'bucket',
      name: 'a.txt',
      size: 1,
      type: 'text/plain',
    })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('store_unavailable')
  })

  it('when the declared size is above the limit, then 413 file_too_large', async () => {
    const res = await api(h, 'POST', '/api/upload', {
      store: 'blob',
      name: 'big.iso',
      size: 1048576001,
      type: 'application/octet-stream',
    })
    expect(res.status).toBe(413)
    expect(res.body.error.code).toBe('file_too_large')
  })
})

describe('filenames in Content-Disposition', () => {
  it.each([
    ['quotes', 'say "hi".txt', 'attachment; filename="say \\"hi\\".txt"'],
    // Latin-1 letters too: as raw header bytes a browser reads them as UTF-8 (café.txt became cafý.txt).
    ['Latin-1 letters', 'café.txt', `attachment; filename=cafe.txt; filename*=UTF-8''caf%C3%A9.txt`],
    ['CJK', '报告.pdf', `attachment; filename=__.pdf; filename*=UTF-8''%E6%8A%A5%E5%91%8A.pdf`],
    ['emoji', '🎉party.zip', `attachment; filename=_party.zip; filename*=UTF-8''%F0%9F%8E%89party.zip`],
    ['a percent sign', '100%.txt', `attachment; filename=100_.txt; filename*=UTF-8''100%25.txt`],
    ['an RTL override', 'invoice\u202Efdp.exe', 'attachment; filename=invoicefdp.exe'],
    ['an RTL mark', 'a\u200Fb.txt', 'attachment; filename=ab.txt'],
  ])('when the name has %s, then the header is safe and RFC 6266 encoded', async (_what, name, expected) => {
    const { file, uploadStatus } = await uploadFile(h, { name, data: Buffer.from('hello') })
    expect(uploadStatus).toBe(201)
    const { body } = await api(h, 'POST', '/api/share', { files: [file] })
    const res = await fetch(
      `${h.url}/api/download?code=${body.code}&path=${encodeURIComponent(file.pathname)}`,
    )
    expect(res.status).toBe(200)
    expect(res.headers.get('content-disposition')).toBe(expected)
    const taken = await api(h, 'POST', '/api/take', { code: body.code })
    expect(taken.body.manifest.files[0].name).toBe(name)
  })
})

describe("traversal: path must be one of the share's own files", () => {
  let code: string
  let other: string
  beforeAll(async () => {
    const a = await uploadFile(h, { name: 'a.txt', data: Buffer.from('a') })
    code = (await api(h, 'POST', '/api/share', { files: [a.file] })).body.code
    const b = await uploadFile(h, { name: 'b.txt', data: Buffer.from('b') })
    await api(h, 'POST', '/api/share', { files: [b.file] })
    other = b.file.pathname
  })

  it.each([
    ['../x', '../x'],
    ['an encoded ../', '%2e%2e%2f%2e%2e%2fetc%2fpasswd'],
    ['an absolute path', '/etc/passwd'],
    ['the pathname of another share', 'OTHER'],
  ])('when path is %s, then 404 and no bytes', async (_what, raw) => {
    const p = raw === 'OTHER' ? encodeURIComponent(other) : raw.includes('%') ? raw : encodeURIComponent(raw)
    const res = await fetch(`${h.url}/api/download?code=${code}&path=${p}`)
    expect(res.status).toBe(404)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('file_not_found')
  })

  it('when path holds a NUL byte, then 400 bad_request naming the parameter, and no bytes', async () => {
    const res = await fetch(`${h.url}/api/download?code=${code}&path=a.txt%00`)
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: { code: string; message: string } }
    expect(body.error).toMatchObject({
      code: 'bad_request',
      message: 'query.path: must not contain NUL characters',
    })
  })

  it('when the blob token names a pathname outside the store, then nothing is written outside it', async () => {
    const token = h.services.uploads['d'].tokens.sign({
      instance: 'blob',
      pathname: '../escape.txt',
      size: 1,
      maxBytes: 100,
      expiresAt: new Date(Date.now() + 60_000),
      allowOverwrite: false,
    })
    const res = await fetch(`${h.url}/api/blob/upload`, {
      method: 'PUT',
      headers: { 'x-upload-token': token, 'content-type': 'application/octet-stream' },
      body: 'x',
    })
    // No permission was issued for it, so nothing is written at all (the blob store's own
    // resolution inside its folder is tested in test/unit/storage.test.ts).
    expect(res.status).toBe(401)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upload_token_expired')
    expect(readdirSync(path.dirname(h.config.BLOB_DIR))).not.toContain('escape.txt')
  })
})

describe('blob upload token', () => {
  it('when the token is missing, forged or expired, then 401 and nothing is stored', async () => {
    const { grant } = await uploadFile(h, { name: 't.txt', data: Buffer.from('t') })
    const put = (headers: Record<string, string>) =>
      fetch(`${h.url}/api/blob/upload`, {
        method: 'PUT',
        headers: { 'content-type': 'application/octet-stream', ...headers },
        body: 'x',
      })
    expect((await put({})).status).toBe(401)
    const token = grant.body.upload.headers['x-upload-token'] as string
    const [payload, mac] = token.split('.')
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString())
    const forged = Buffer.from(JSON.stringify({ ...claims, m: null })).toString('base64url')
    const res = await put({ 'x-upload-token': `${forged}.${mac}` })
    expect(res.status).toBe(401)
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('upload_token_invalid')
  })

  it('when the same permission is used twice, then the second PUT is 409 and the first file stays', async () => {
    const { grant, file } = await uploadFile(h, { name: 'twice.txt', data: Buffer.from('first') })
    const res = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: grant.body.upload.headers,
      body: 'fifth',
    })
    expect(res.status).toBe(409)
    const { body } = await api(h, 'POST', '/api/share', { files: [file] })
    const got = await fetch(
      `${h.url}/api/download?code=${body.code}&path=${encodeURIComponent(file.pathname)}`,
    )
    expect(await got.text()).toBe('first')
  })

  it('when the body is sent as JSON, then 415 (the file must stream as octet-stream)', async () => {
    const { grant } = await uploadFile(h, {
      name: 'j.json',
      data: Buffer.from('{}'),
      type: 'application/json',
    })
    const res = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: { ...grant.body.upload.headers, 'content-type': 'application/json' },
      body: '{}',
    })
    expect(res.status).toBe(415)
  })
})

describe('size limits', () => {
  afterEach(async () => {
    await h.services.settings.update({ maxFileSizeBytes: 1048576000 })
  })

  it('when more bytes stream than the permission allows, then the blob store refuses it while streaming and keeps nothing', async () => {
    await h.services.settings.update({ maxFileSizeBytes: 1000 })
    const grant = await api(h, 'POST', '/api/upload', {
      store: 'blob',
      name: 'big.bin',
      size: 1000,
      type: 'application/octet-stream',
    })
    expect(grant.body.options.maximumSizeInBytes).toBe(1000)
    // A stream without Content-Length: only the streaming check can stop it.
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < 20; i++) c.enqueue(new Uint8Array(10_000))
        c.close()
      },
    })
    const res = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: grant.body.upload.headers,
      body,
      duplex: 'half',
    } as RequestInit).catch(() => null)
    if (res) {
      expect(res.status).toBe(413)
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('file_too_large')
    }
    const shared = await api(h, 'POST', '/api/share', {
      files: [
        {
          name: 'big.bin',
          size: 1000,
          type: 'application/octet-stream',
          pathname: grant.body.pathname,
          proof: grant.body.proof,
          store: 'blob',
        },
      ],
    })
    expect(shared.status).toBe(400)
    expect(shared.body.error.code).toBe('upload_missing')
    expect(readdirSync(path.join(h.config.BLOB_DIR, '.tmp'))).toEqual([])
  })

  it('when Content-Length already exceeds the cap, then 413 before reading the body', async () => {
    await h.services.settings.update({ maxFileSizeBytes: 1000 })
    const grant = await api(h, 'POST', '/api/upload', {
      store: 'blob',
      name: 'big2.bin',
      size: 10,
      type: 'application/octet-stream',
    })
    const res = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: grant.body.upload.headers,
      body: new Uint8Array(5000),
    })
    expect(res.status).toBe(413)
  })

  it('when the upload is larger than declared, then the PUT is refused and share finds nothing', async () => {
    // A permission is for exactly its declared size, far below maxFileSizeBytes here.
    const { file, uploadStatus } = await uploadFile(h, {
      name: 'liar.bin',
      data: randomBytes(2000),
      declaredSize: 10,
    })
    expect(uploadStatus).toBe(413)
    const shared = await api(h, 'POST', '/api/share', { files: [{ ...file, size: 10 }] })
    expect(shared.status).toBe(400)
    expect(shared.body.error.code).toBe('upload_missing')
  })

  it('when the limit is lowered after the upload, then share refuses the file as too large', async () => {
    const { file, uploadStatus } = await uploadFile(h, { name: 'big.bin', data: randomBytes(2000) })
    expect(uploadStatus).toBe(201)
    await h.services.settings.update({ maxFileSizeBytes: 1000 })
    const tooBig = await api(h, 'POST', '/api/share', { files: [file] })
    expect(tooBig.status).toBe(413)
    expect(tooBig.body.error.code).toBe('file_too_large')
  })
})

describe('share validation', () => {
  it('when a pathname was never issued, then 400 upload_not_issued and nothing is written', async () => {
    const before = await countRows()
    const res = await api(h, 'POST', '/api/share', {
      files: [{ name: 'x', size: 1, type: 'text/plain', pathname: 'deadbeef/x', store: 'blob', proof: 'x' }],
    })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('upload_not_issued')
    expect(await countRows()).toEqual(before)
  })

  it('when a file is already in a share, then 409 upload_already_shared', async () => {
    const { file } = await uploadFile(h, { name: 'dup.txt', data: Buffer.from('d') })
    expect((await api(h, 'POST', '/api/share', { files: [file] })).status).toBe(200)
    const again = await api(h, 'POST', '/api/share', { files: [file] })
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('upload_already_shared')
  })

  it('when two shares race for one upload, then exactly one wins', async () => {
    const { file } = await uploadFile(h, { name: 'race.txt', data: Buffer.from('r') })
    const results = await Promise.all(
      Array.from({ length: 8 }, () => api(h, 'POST', '/api/share', { files: [file] })),
    )
    expect(results.filter((r) => r.status === 200)).toHaveLength(1)
    expect(results.filter((r) => r.status === 409)).toHaveLength(7)
  })

  it.each([
    [{ files: [] }, 'body.files'],
    [
      {
        files: Array.from({ length: 101 }, (_, i) => ({
          name: `f${i}`,
          size: 1,
          type: 'text/plain',
          pathname: `p/${i}`,
          store: 'blob',
          proof: 'x',
        })),
      },
      'body.files',
    ],
    [
      {
        files: [{ name: 'a', size: 1, type: 'text/plain', pathname: 'p/a', store: 'blob', proof: 'x' }],
        expireDays: 0,
      },
      'body.expireDays',
    ],
    [
      {
        files: [{ name: 'a', size: 1, type: 'text/plain', pathname: 'p/a', store: 'blob', proof: 'x' }],
        expireDays: 31,
      },
      'body.expireDays',
    ],
    [
      {
        files: [{ name: 'a', size: 1, type: 'text/plain', pathname: 'p/a', store: 'blob', proof: 'x' }],
        maxDownloads: 0,
      },
      'body.maxDownloads',
    ],
    [
      {
        files: [{ name: 'a', size: 1, type: 'text/plain', pathname: 'p/a', store: 'blob', proof: 'x' }],
        maxDownloads: 101,
      },
      'body.maxDownloads',
    ],
  ])('when the share request is %#, then 400 naming %s', async (body, field) => {
    const res = await api(h, 'POST', '/api/share', body)
    expect(res.status).toBe(400)
    expect(res.body.error.message.startsWith(field)).toBe(true)
  })

  it('when unlimited downloads are asked for while unlimited mode is off, then 403 unlimited_disabled', async () => {
    const { file } = await uploadFile(h, { name: 'u.txt', data: Buffer.from('u') })
    const res = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: null, authCode: 'psac_x' })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe('unlimited_disabled')
  })

  it('when take gets a malformed code, then 400; an unknown one, then 404 share_not_found', async () => {
    expect((await api(h, 'POST', '/api/take', { code: 'abc' })).status).toBe(400)
    const res = await api(h, 'POST', '/api/take', { code: '000000000000' })
    expect(res.status).toBe(404)
    expect(res.body.error.code).toBe('share_not_found')
  })
})

// Issue 19 item 1: these inputs reached Postgres with a NUL and answered 500. Core's one input
// rule now answers 400 naming the field; these pin pickup-share's routes to it.
describe('NUL characters and lone surrogates', () => {
  let admin: Record<string, string>
  beforeAll(async () => {
    admin = await adminLogin(h)
  })
  const file = (pathname: string) => ({
    name: 'a.txt',
    size: 1,
    type: 'text/plain',
    pathname,
    store: 'blob',
    proof: 'x',
  })

  it.each([
    [
      'a NUL in a share pathname (anonymous)',
      'POST',
      '/api/share',
      { files: [file('a\u0000b')] },
      'body.files.0.pathname',
      'NUL',
    ],
    [
      'a lone surrogate in a share pathname',
      'POST',
      '/api/share',
      { files: [file('a\ud800b')] },
      'body.files.0.pathname',
      'well-formed',
    ],
    ['a NUL in an admin share search', 'GET', '/api/admin/shares?q=%00', undefined, 'query.q', 'NUL'],
    [
      'a NUL in an audit action filter',
      'GET',
      '/api/admin/audit?action=share.delete%00',
      undefined,
      'query.action',
      'NUL',
    ],
    [
      'a NUL in an authorization code note',
      'POST',
      '/api/admin/authcodes',
      { scope: 'both', expiresInHours: 1, note: 'for\u0000Ann' },
      'body.note',
      'NUL',
    ],
    [
      'a lone surrogate in an authorization code note',
      'POST',
      '/api/admin/authcodes',
      { scope: 'both', expiresInHours: 1, note: '\udfff' },
      'body.note',
      'well-formed',
    ],
  ])(
    'when %s comes in, then 400 bad_request naming the field, and nothing is stored',
    async (_what, method, route, body, field, problem) => {
      const before = {
        shares: await deps.db.share.count(),
        codes: await deps.db.authCode.count(),
      }
      const res = await api(h, method, route, body, route.startsWith('/api/admin') ? admin : {})
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('bad_request')
      expect(res.body.error.message.startsWith(`${field}: `)).toBe(true)
      expect(res.body.error.message).toContain(problem)
      expect({ shares: await deps.db.share.count(), codes: await deps.db.authCode.count() }).toEqual(before)
    },
  )

  it('when a session cookie is not valid percent-encoding, then 401 session_required, not 500', async () => {
    const res = await api(h, 'GET', '/api/admin/shares', undefined, { cookie: 'qps_session=%E0%A4%A' })
    expect(res.status).toBe(401)
    expect(res.body.error.code).toBe('session_required')
  })
})
