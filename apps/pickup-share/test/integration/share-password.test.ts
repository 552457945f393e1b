import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { captureLogger, itWhen } from '@quartet/core/testing'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// Issue 47 item 1: a share the sender protects with a password. take and every download (file,
// range, HEAD, download-all, preview) need it — the X-Share-Password header, the password field
// of take, or the access grant a take with the right password returned — and never a URL.
const deps = testDeps()
const log = captureLogger()
const run = promisify(execFile)
const PASSWORD = 'Sesame-Öffne-Dich 47'
const TOOLS = {
  programs: [
    { name: 'curl', debian: 'curl' },
    { name: 'wget', debian: 'wget' },
    { name: 'aria2c', debian: 'aria2' },
  ],
}
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps, { strictGuessLimits: true, logger: log.logger })
  await h.services.settings.update({ takeFailuresPerIp: 1000, takeFailuresGlobal: 1_000_000 })
})
afterAll(async () => {
  await h.close()
})

let addresses = 0
/** A receiver of its own per call: budgets and transfers count per address. */
const someone = () => ({ 'x-forwarded-for': `10.47.${++addresses >> 8}.${addresses & 255}` })
const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')
/** The header as curl sends it: the password's UTF-8 bytes (fetch only takes latin1 strings). */
const passwordHeader = (p: string) => ({ 'x-share-password': Buffer.from(p, 'utf8').toString('latin1') })

async function protectedShare(options: { password?: string; maxDownloads?: number; files?: number } = {}) {
  const files = []
  const data: Buffer[] = []
  for (let i = 0; i < (options.files ?? 1); i++) {
    const bytes = Buffer.from(`secret contents ${i} `.repeat(200 + i))
    data.push(bytes)
    files.push((await uploadFile(h, { name: `note-${i}.txt`, data: bytes, type: 'text/plain' })).file)
  }
  const res = await api(h, 'POST', '/api/share', {
    files,
    maxDownloads: options.maxDownloads ?? 5,
    ...(options.password === undefined ? {} : { password: options.password }),
  })
  expect(res.status).toBe(200)
  return { ...(res.body as { code: string; token: string }), files, data }
}

const get = (
  q: Record<string, string>,
  headers: Record<string, string> = {},
  route = 'download',
  method = 'GET',
) => fetch(`${h.url}/api/${route}?${new URLSearchParams(q).toString()}`, { method, headers })

async function remaining(code: string) {
  return (await api(h, 'POST', '/api/take', { code, password: PASSWORD }, someone())).body.remaining
}

describe('creating a protected share', () => {
  it('when a password is set, then only its scrypt hash is stored and the answer looks as before', async () => {
    const { code, token } = await protectedShare({ password: PASSWORD })
    expect(Object.keys({ code, token })).toEqual(['code', 'token'])
    const rows = await deps.database.query<{ password_hash: string }>(
      `SELECT password_hash FROM share WHERE code = $1`,
      [code],
    )
    expect(rows.rows[0]!.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/)
    expect(JSON.stringify(rows.rows)).not.toContain(PASSWORD)
  })

  it.each([
    ['too short', 'abc', 'at least 4'],
    ['too long', 'x'.repeat(129), 'at most 128'],
    ['a line break', 'pass\nword', 'control characters'],
    ['a space at the end', 'password ', 'begin or end with a space'],
    ['not a string', 12345678, 'string'],
  ])('when the password is %s, then 400 names body.password', async (_what, password, words) => {
    const { file } = await uploadFile(h, { name: 'bad.txt', data: Buffer.from('x') })
    const res = await api(h, 'POST', '/api/share', { files: [file], password })
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('bad_request')
    const issue = res.body.error.details.issues.find((i: { field: string }) => i.field === 'body.password')
    expect(issue.message).toContain(words)
  })
})

describe('a share without a password', () => {
  it('when taken and downloaded, then it answers exactly as before: no access field, no password asked', async () => {
    const { code, files, data } = await protectedShare()
    const taken = await api(h, 'POST', '/api/take', { code }, someone())
    expect(taken.status).toBe(200)
    expect(Object.keys(taken.body)).toEqual(['manifest', 'remaining'])
    // A password sent to an unprotected share changes nothing.
    const withPassword = await api(h, 'POST', '/api/take', { code, password: 'whatever' }, someone())
    expect(withPassword.body).toEqual({ ...taken.body, remaining: 5 })
    const res = await get({ code, path: files[0]!.pathname }, someone())
    expect(res.status).toBe(200)
    expect(sha256(Buffer.from(await res.arrayBuffer()))).toBe(sha256(data[0]!))
  })
})

describe('take of a protected share', () => {
  it('when the password is missing, wrong or right, then 401, 403 and the manifest with an access grant', async () => {
    const { code, token } = await protectedShare({ password: PASSWORD })
    const missing = await api(h, 'POST', '/api/take', { code }, someone())
    expect(missing.status).toBe(401)
    expect(missing.body.error).toMatchObject({
      code: 'share_password_required',
      details: { protected: true },
    })
    expect(missing.body.error.message).toContain('X-Share-Password')
    const wrong = await api(h, 'POST', '/api/take', { code, password: 'not it' }, someone())
    expect(wrong.status).toBe(403)
    expect(wrong.body.error.code).toBe('share_password_wrong')
    expect(JSON.stringify(wrong.body)).not.toContain('manifest')

    const right = await api(h, 'POST', '/api/take', { code, password: PASSWORD }, someone())
    expect(right.status).toBe(200)
    expect(right.headers.get('cache-control')).toBe('no-store')
    expect(right.body).toMatchObject({ manifest: { code }, remaining: 5 })
    expect(right.body.access.grant).toMatch(/^a1\.[0-9a-z]+\.[\w-]{22}$/)
    expect(Date.parse(right.body.access.expiresAt)).toBeGreaterThan(Date.now())
    // The header works for take too, and the link's token needs the password as well.
    const byHeader = await api(
      h,
      'POST',
      '/api/take',
      { code },
      { ...someone(), ...passwordHeader(PASSWORD) },
    )
    expect(byHeader.status).toBe(200)
    expect((await api(h, 'POST', '/api/take', { token }, someone())).status).toBe(401)
    const byLink = await api(h, 'POST', '/api/take', { token, password: PASSWORD }, someone())
    expect(byLink.status).toBe(200)
    expect(byLink.body.access.grant).toMatch(/^a1\./)
  })

  it('when a wrong password is tried, then no download is spent and the code guessing budget is untouched', async () => {
    await h.services.settings.update({ takeFailuresPerIp: 2 })
    try {
      const { code } = await protectedShare({ password: PASSWORD, maxDownloads: 2 })
      const guesser = someone()
      for (let i = 0; i < 5; i++)
        expect((await api(h, 'POST', '/api/take', { code, password: `wrong ${i}` }, guesser)).status).toBe(
          403,
        )
      // Five wrong passwords did not spend the code budget of 2: the right code still opens.
      const right = await api(h, 'POST', '/api/take', { code, password: PASSWORD }, guesser)
      expect(right.status).toBe(200)
      expect(right.body.remaining).toBe(2)
      // A wrong code is still the code budget's business: 404, then 429 past it.
      expect((await api(h, 'POST', '/api/take', { code: '999999999991' }, guesser)).status).toBe(404)
      expect((await api(h, 'POST', '/api/take', { code: '999999999992' }, guesser)).status).toBe(404)
      expect((await api(h, 'POST', '/api/take', { code: '999999999993' }, guesser)).status).toBe(429)
    } finally {
      await h.services.settings.update({ takeFailuresPerIp: 1000 })
    }
  })
})

describe('every download of a protected share', () => {
  it('when nothing, a wrong password, the header or the grant come, then 401, 403 (nothing spent), and the file', async () => {
    const { code, token, files, data } = await protectedShare({ password: PASSWORD, maxDownloads: 3 })
    const path = files[0]!.pathname
    const none = await get({ code, path }, someone())
    expect(none.status).toBe(401)
    expect((await none.json()).error.code).toBe('share_password_required')
    const wrong = await get({ code, path }, { ...someone(), ...passwordHeader('wrong') })
    expect(wrong.status).toBe(403)
    expect((await wrong.json()).error.code).toBe('share_password_wrong')
    const badGrant = await get({ code, path, access: 'a1.zzzzzz.AAAAAAAAAAAAAAAAAAAAAA' }, someone())
    expect(badGrant.status).toBe(401)
    expect((await get({ token, path }, someone())).status).toBe(401)
    expect(await remaining(code)).toBe(3)

    const byHeader = await get({ code, path }, { ...someone(), ...passwordHeader(PASSWORD) })
    expect(byHeader.status).toBe(200)
    expect(sha256(Buffer.from(await byHeader.arrayBuffer()))).toBe(sha256(data[0]!))
    const { access } = (await api(h, 'POST', '/api/take', { token, password: PASSWORD }, someone())).body
    const byGrant = await get({ token, path, access: access.grant }, someone())
    expect(byGrant.status).toBe(200)
    expect(sha256(Buffer.from(await byGrant.arrayBuffer()))).toBe(sha256(data[0]!))
    expect(await remaining(code)).toBe(1)
  })

  it('when HEAD, a range, download-all and a preview come without the password, then 401; with a wrong one 403; with the header or the grant, they work', async () => {
    const { code, files, data } = await protectedShare({ password: PASSWORD, files: 2, maxDownloads: 5 })
    const path = files[1]!.pathname
    const { access } = (await api(h, 'POST', '/api/take', { code, password: PASSWORD }, someone())).body
    const receiver = someone()
    const withHeader = { ...receiver, ...passwordHeader(PASSWORD) }
    const wrongHeader = { ...receiver, ...passwordHeader('Wrong-Guess-1') }

    expect((await get({ code, path }, receiver, 'download', 'HEAD')).status).toBe(401)
    expect((await get({ code, path }, wrongHeader, 'download', 'HEAD')).status).toBe(403)
    expect((await get({ code, path }, withHeader, 'download', 'HEAD')).status).toBe(200)
    const head = await get({ code, path, access: access.grant }, receiver, 'download', 'HEAD')
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe(String(data[1]!.length))

    expect((await get({ code, path }, { ...receiver, range: 'bytes=10-19' })).status).toBe(401)
    expect((await get({ code, path }, { ...wrongHeader, range: 'bytes=10-19' })).status).toBe(403)
    const rangeByHeader = await get({ code, path }, { ...withHeader, range: 'bytes=0-9' })
    expect(rangeByHeader.status).toBe(206)
    expect(Buffer.from(await rangeByHeader.arrayBuffer())).toEqual(data[1]!.subarray(0, 10))
    const range = await get({ code, path, access: access.grant }, { ...receiver, range: 'bytes=10-19' })
    expect(range.status).toBe(206)
    expect(Buffer.from(await range.arrayBuffer())).toEqual(data[1]!.subarray(10, 20))

    expect((await get({ code }, receiver, 'download-all')).status).toBe(401)
    expect((await get({ code }, receiver, 'download-all', 'HEAD')).status).toBe(401)
    expect((await get({ code }, wrongHeader, 'download-all')).status).toBe(403)
    expect((await get({ code, access: access.grant }, receiver, 'download-all', 'HEAD')).status).toBe(200)
    expect((await get({ code }, withHeader, 'download-all', 'HEAD')).status).toBe(200)
    const zip = await get({ code }, { ...receiver, ...passwordHeader(PASSWORD) }, 'download-all')
    expect(zip.status).toBe(200)
    expect(zip.headers.get('content-type')).toBe('application/zip')
    await zip.arrayBuffer()

    expect((await get({ code, path: files[0]!.pathname }, receiver, 'preview')).status).toBe(401)
    expect((await get({ code, path: files[0]!.pathname }, wrongHeader, 'preview')).status).toBe(403)
    expect((await get({ code, path: files[0]!.pathname }, withHeader, 'preview', 'HEAD')).status).toBe(200)
    const preview = await get({ code, path: files[0]!.pathname, access: access.grant }, receiver, 'preview')
    expect(preview.status).toBe(200)
    expect(Buffer.from(await preview.arrayBuffer())).toEqual(data[0]!)
    // Four wrong headers above spent no download: the receiver's two files and the ZIP were
    // each one download (the HEADs none), so 5 − 3 are left.
    expect(await remaining(code)).toBe(2)
  })

  itWhen(
    TOOLS,
    'when curl, wget and aria2c download with the grant from take (curl resuming a cut one), or curl and wget with the header, then the files arrive whole',
    async () => {
      const { code, files, data } = await protectedShare({ password: PASSWORD, maxDownloads: 10 })
      const { access } = (await api(h, 'POST', '/api/take', { code, password: PASSWORD }, someone())).body
      const dir = mkdtempSync(path.join(os.tmpdir(), 'protected-tools-'))
      try {
        const url = `${h.url}/api/download?${new URLSearchParams({ code, path: files[0]!.pathname, access: access.grant })}`
        await run('curl', ['-sfS', '-o', path.join(dir, 'curl-grant'), url])
        await run('wget', ['-q', '-O', path.join(dir, 'wget-grant'), url])
        const bare = `${h.url}/api/download?${new URLSearchParams({ code, path: files[0]!.pathname })}`
        await run('curl', [
          '-sfS',
          '-H',
          `X-Share-Password: ${PASSWORD}`,
          '-o',
          path.join(dir, 'curl-header'),
          bare,
        ])
        await run('wget', [
          '-q',
          `--header=X-Share-Password: ${PASSWORD}`,
          '-O',
          path.join(dir, 'wget-header'),
          bare,
        ])
        // A cut download resumed with curl -C -, and aria2c's parallel ranges, with the grant alone.
        const cut = path.join(dir, 'curl-resumed')
        await run('curl', ['-sfS', '-r', '0-999', '-o', cut, url])
        expect(readFileSync(cut)).toHaveLength(1000)
        await run('curl', ['-sfS', '-C', '-', '-o', cut, url])
        await run('aria2c', ['-q', '-x2', '-s2', '--min-split-size=1M', '-d', dir, '-o', 'aria2c-grant', url])
        for (const name of [
          'curl-grant',
          'wget-grant',
          'curl-header',
          'wget-header',
          'curl-resumed',
          'aria2c-grant',
        ])
          expect(sha256(readFileSync(path.join(dir, name)))).toBe(sha256(data[0]!))
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    },
  )
})

describe('what the admin and the logs see', () => {
  it('when the admin lists shares, then a protected share says so as a boolean, with no password or hash', async () => {
    const { code } = await protectedShare({ password: PASSWORD })
    const { code: open } = await protectedShare()
    const cookie = await adminLogin(h)
    const list = await api(
      h,
      'GET',
      '/api/admin/shares?pageSize=100&sort=createdAt&order=desc',
      undefined,
      cookie,
    )
    expect(list.status).toBe(200)
    const items = list.body.items as Array<{ code: string; protected: boolean }>
    expect(items.find((s) => s.code === code)!.protected).toBe(true)
    expect(items.find((s) => s.code === open)!.protected).toBe(false)
    expect(JSON.stringify(list.body)).not.toMatch(/scrypt|passwordHash|password_hash/)
    expect(JSON.stringify(list.body)).not.toContain(PASSWORD)
  })

  it('when everything above ran, then no log line holds the password or an access grant', async () => {
    const { code, files } = await protectedShare({ password: PASSWORD })
    const { access } = (await api(h, 'POST', '/api/take', { code, password: PASSWORD }, someone())).body
    await (await get({ code, path: files[0]!.pathname, access: access.grant }, someone())).arrayBuffer()
    await (
      await get({ code, path: files[0]!.pathname }, { ...someone(), ...passwordHeader('Wrong-Guess-7781') })
    ).arrayBuffer()
    await new Promise((resolve) => setTimeout(resolve, 100))
    const text = JSON.stringify(log.lines)
    expect(
      log.lines.some((l) => String((l.req as { url?: string })?.url).includes('access=[redacted]')),
    ).toBe(true)
    expect(text).not.toContain(PASSWORD)
    expect(text).not.toContain(Buffer.from(PASSWORD, 'utf8').toString('latin1'))
    expect(text).not.toContain(access.grant)
    expect(text).not.toContain('Wrong-Guess-7781')
  })
})
