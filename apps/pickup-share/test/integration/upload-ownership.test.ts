import { createHash, randomBytes } from 'node:crypto'
import * as tus from 'tus-js-client'
import { api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

// Issue 48 item 2: an upload belongs to its uploader. Only the proof its permission returned turns
// it into a share; a stranger who learned the pathname gets the answer an unknown pathname gets.

const deps = testDeps()
let h: Harness
beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h.close()
})

const victim = { 'x-forwarded-for': '198.51.100.7' }
const stranger = { 'x-forwarded-for': '203.0.113.9' }
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

/** What a refusal says, without the request id that differs between any two answers. */
const refusal = (r: { status: number; body: { error: { code: string; message: string } } }) => ({
  status: r.status,
  code: r.body.error.code,
  message: r.body.error.message,
})

describe('only the uploader can share an upload', () => {
  it('when a stranger shares a victim’s pathname without its proof, then it gets the unknown-pathname answer and the victim still shares and downloads the bytes', async () => {
    const data = randomBytes(5000)
    const { file } = await uploadFile(h, { name: 'payslip.pdf', data, type: 'application/pdf' })
    const { proof, ...withoutProof } = file
    expect(proof).toMatch(/^[A-Za-z0-9_-]{43}$/)

    const guesses = [
      { ...withoutProof, proof: 'x' },
      { ...withoutProof, proof: proof.slice(0, -1) + (proof.endsWith('A') ? 'B' : 'A') },
      { ...withoutProof, proof: randomBytes(32).toString('base64url') },
    ]
    const unknown = await api(
      h,
      'POST',
      '/api/share',
      { files: [{ ...withoutProof, pathname: `${'0'.repeat(32)}/payslip.pdf`, proof }] },
      stranger,
    )
    expect(unknown.status).toBe(400)
    expect(unknown.body.error.code).toBe('upload_not_issued')
    for (const f of guesses) {
      const taken = await api(h, 'POST', '/api/share', { files: [f], maxDownloads: 5 }, stranger)
      expect(refusal(taken)).toEqual(refusal(unknown))
    }
    // Without any proof, from another address than the upload's: the same answer again.
    const bare = await api(h, 'POST', '/api/share', { files: [withoutProof] }, stranger)
    expect(refusal(bare)).toEqual(refusal(unknown))

    const mine = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 }, victim)
    expect(mine.status).toBe(200)
    const res = await fetch(
      `${h.url}/api/download?code=${mine.body.code}&path=${encodeURIComponent(file.pathname)}`,
    )
    expect(res.status).toBe(200)
    expect(sha(new Uint8Array(await res.arrayBuffer()))).toBe(sha(data))
  })

  it('when a stranger presents the proof of an upload of its own for the victim’s pathname, then it is refused the same way', async () => {
    const mine = await uploadFile(h, { name: 'a.bin', data: randomBytes(100) })
    const theirs = await uploadFile(h, { name: 'b.bin', data: randomBytes(100) })
    const stolen = { ...mine.file, proof: theirs.file.proof }
    const res = await api(h, 'POST', '/api/share', { files: [stolen] }, stranger)
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe('upload_not_issued')
    // One file without its proof spoils the whole share: the stranger's own file is not shared either.
    const mixed = await api(h, 'POST', '/api/share', { files: [theirs.file, stolen] }, stranger)
    expect(mixed.status).toBe(400)
    expect((await api(h, 'POST', '/api/share', { files: [theirs.file] }, stranger)).status).toBe(200)
    expect((await api(h, 'POST', '/api/share', { files: [mine.file] }, victim)).status).toBe(200)
  })

  it('when a client sends seed 002’s five fields without a proof, then it shares its own upload from its own address, and nobody else’s', async () => {
    const uploader = { 'x-forwarded-for': '192.0.2.44' }
    const data = randomBytes(300)
    const grant = await api(
      h,
      'POST',
      '/api/upload',
      { store: 'blob', name: 'seed.bin', size: 300 },
      uploader,
    )
    expect(grant.status).toBe(200)
    const put = await fetch(new URL(grant.body.upload.url, h.url), {
      method: 'PUT',
      headers: grant.body.upload.headers,
      body: new Uint8Array(data),
    })
    expect(put.status).toBeLessThan(300)
    const entry = {
      name: 'seed.bin',
      size: 300,
      type: 'application/octet-stream',
      pathname: grant.body.pathname,
      store: 'blob',
    }

    const fromElsewhere = await api(h, 'POST', '/api/share', { files: [entry] }, stranger)
    expect(fromElsewhere.status).toBe(400)
    expect(fromElsewhere.body.error.code).toBe('upload_not_issued')

    const own = await api(h, 'POST', '/api/share', { files: [entry], maxDownloads: 1 }, uploader)
    expect(own.status).toBe(200)
    const res = await fetch(
      `${h.url}/api/download?code=${own.body.code}&path=${encodeURIComponent(entry.pathname)}`,
    )
    expect(sha(new Uint8Array(await res.arrayBuffer()))).toBe(sha(data))
  })

  it('when the upload is already shared, then a stranger without the proof still gets the unknown-pathname answer, not 409', async () => {
    const { file } = await uploadFile(h, { name: 'once.bin', data: randomBytes(10) })
    expect((await api(h, 'POST', '/api/share', { files: [file] }, victim)).status).toBe(200)
    const stranger409 = await api(h, 'POST', '/api/share', { files: [{ ...file, proof: 'nope' }] }, stranger)
    expect(stranger409.status).toBe(400)
    expect(stranger409.body.error.code).toBe('upload_not_issued')
    // The uploader is told what happened.
    const again = await api(h, 'POST', '/api/share', { files: [file] }, victim)
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe('upload_already_shared')
  })
})

describe('only the uploader can touch its resumable (tus) upload', () => {
  interface Grant {
    pathname: string
    proof: string
    tus: { endpoint: string; headers: Record<string, string> }
  }
  const SIZE = 64 * 1024
  const TUS = { 'tus-resumable': '1.0.0' }
  const b64 = (s: string) => Buffer.from(s).toString('base64url')

  async function permission(name: string): Promise<Grant> {
    const res = await api(h, 'POST', '/api/upload', { store: 'blob', name, size: SIZE }, victim)
    expect(res.status).toBe(200)
    return res.body
  }

  /** The upload right after its creation (no byte yet), as tus-js-client makes it: its URL. */
  async function created(grant: Grant): Promise<string> {
    const res = await fetch(`${h.url}${grant.tus.endpoint}`, {
      method: 'POST',
      headers: { ...TUS, ...grant.tus.headers, 'upload-length': String(SIZE) },
    })
    expect(res.status).toBe(201)
    return new URL(res.headers.get('location')!, h.url).href
  }

  /** tus-js-client, unmodified, sending `data` to the upload at `url` (from the offset the server has). */
  const tusFinish = (url: string, grant: Grant, data: Buffer) =>
    new Promise<void>((resolve, reject) => {
      new tus.Upload(data, {
        endpoint: `${h.url}${grant.tus.endpoint}`,
        uploadUrl: url,
        headers: grant.tus.headers,
        chunkSize: SIZE / 4,
        retryDelays: [],
        onSuccess: () => resolve(),
        onError: reject,
      }).start()
    })

  /** The owner shares the upload with its proof and downloads it: the sha256 of what comes back. */
  async function sharedSha(grant: Grant): Promise<string> {
    const entry = { name: grant.pathname.split('/')[1]!, size: SIZE, type: 'application/octet-stream' }
    const shared = await api(
      h,
      'POST',
      '/api/share',
      { files: [{ ...entry, pathname: grant.pathname, store: 'blob', proof: grant.proof }], maxDownloads: 1 },
      victim,
    )
    expect(shared.status).toBe(200)
    const res = await fetch(
      `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(grant.pathname)}`,
    )
    expect(res.status).toBe(200)
    return sha(new Uint8Array(await res.arrayBuffer()))
  }

  /**
   * The URLs a stranger who knows the pathname can make: the old form (base64url of the pathname,
   * no tag), the new form with a random tag, with the tag of another upload, with the uploader's
   * proof as tag, and with nothing after the dot.
   */
  function strangersUrls(grant: Grant, other: string): string[] {
    const base = `${h.url}${grant.tus.endpoint}/${b64(grant.pathname)}`
    const otherTag = other.slice(other.lastIndexOf('.') + 1)
    return [
      base,
      `${base}.${randomBytes(16).toString('base64url')}`,
      `${base}.${otherTag}`,
      `${base}.${grant.proof}`,
      `${base}.${grant.proof.slice(0, 22)}`,
      `${base}.`,
    ]
  }

  /** The URL of an upload that does not exist (the server's own tag for a pathname nobody was given). */
  const unknownUrl = () => `${h.url}${h.services.tus.uploadUrlOf('blob', `${'0'.repeat(32)}/nobody.bin`)}`

  type Method = 'HEAD' | 'GET' | 'DELETE' | 'PATCH' | 'PATCH@0'
  async function touch(url: string, method: Method, body = randomBytes(SIZE)) {
    const res = await fetch(
      url,
      method === 'PATCH' || method === 'PATCH@0'
        ? {
            method: 'PATCH',
            headers: {
              ...TUS,
              'upload-offset': method === 'PATCH' ? String(SIZE / 2) : '0',
              'content-type': 'application/offset+octet-stream',
            },
            body: method === 'PATCH' ? body.subarray(SIZE / 2) : body,
          }
        : { method, headers: TUS },
    )
    const text = await res.text()
    const envelope = text ? (JSON.parse(text) as { error: { code: string; message: string } }) : null
    // Everything but the request id, which differs between any two answers.
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      offset: res.headers.get('upload-offset'),
      code: envelope?.error.code ?? null,
      message: envelope?.error.message ?? null,
    }
  }

  it('when the upload is created, then its Location carries a tag of the server beside the pathname, and that tag does not let its reader share the upload', async () => {
    const grant = await permission('located.bin')
    const url = await created(grant)
    const segment = new URL(url).pathname.split('/').pop()!
    const [encoded, tag] = segment.split('.')
    expect(Buffer.from(encoded!, 'base64url').toString()).toBe(grant.pathname)
    expect(tag).toMatch(/^[A-Za-z0-9_-]{22}$/) // 128 bits
    expect(grant.proof.startsWith(tag!)).toBe(false)
    // Someone who read the URL in a log: it writes the upload, it does not share it.
    const entry = {
      name: 'located.bin',
      size: SIZE,
      type: 'application/octet-stream',
      pathname: grant.pathname,
      store: 'blob',
    }
    for (const proof of [tag!, segment]) {
      const taken = await api(h, 'POST', '/api/share', { files: [{ ...entry, proof }] }, stranger)
      expect(taken.status).toBe(400)
      expect(taken.body.error.code).toBe('upload_not_issued')
    }
  })

  it('when a stranger who knows the pathname sends bytes to an upload URL it made, then it gets the unknown-upload answer, nothing is written, and the owner’s upload completes with the owner’s bytes', async () => {
    const grant = await permission('payslip.pdf')
    const url = await created(grant)
    const other = await created(await permission('other.bin'))
    const unknown = {} as Record<Method, Awaited<ReturnType<typeof touch>>>
    for (const m of ['HEAD', 'GET', 'PATCH', 'PATCH@0'] as const) unknown[m] = await touch(unknownUrl(), m)
    expect(unknown['PATCH@0']).toMatchObject({ status: 404, code: 'upload_not_found' })
    expect(unknown.HEAD).toMatchObject({ status: 404, offset: null })

    const theirs = randomBytes(SIZE)
    for (const foreign of strangersUrls(grant, other))
      for (const m of ['HEAD', 'GET', 'PATCH@0', 'PATCH'] as const)
        expect({ url: foreign, m, answer: await touch(foreign, m, theirs) }).toEqual({
          url: foreign,
          m,
          answer: unknown[m],
        })

    // Not a byte of theirs arrived: the owner's upload is where the owner left it.
    const head = await fetch(url, { method: 'HEAD', headers: TUS })
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe('0')
    const mine = randomBytes(SIZE)
    await tusFinish(url, grant, mine)
    expect(await sharedSha(grant)).toBe(sha(mine))
    // A finished upload's URL serves no bytes either (downloads go through shares).
    expect(await touch(url, 'GET')).toEqual(unknown.GET)
  })

  it('when a stranger who knows the pathname cancels or reads a half-sent upload through a URL it made, then it gets the unknown-upload answer and the owner’s upload survives, resumes and is shared', async () => {
    const grant = await permission('half.bin')
    const mine = randomBytes(SIZE)
    // The owner's tus-js-client sends half, then the connection is gone.
    let url = ''
    await new Promise<void>((resolve, reject) => {
      const upload = new tus.Upload(mine, {
        endpoint: `${h.url}${grant.tus.endpoint}`,
        headers: grant.tus.headers,
        chunkSize: SIZE / 2,
        retryDelays: [],
        onChunkComplete: () => {
          url = upload.url!
          void upload.abort().then(resolve, reject)
        },
        onError: reject,
      })
      upload.start()
    })
    const other = await created(await permission('other2.bin'))
    const unknown = { HEAD: await touch(unknownUrl(), 'HEAD'), DELETE: await touch(unknownUrl(), 'DELETE') }
    expect(unknown.DELETE).toMatchObject({ status: 404, code: 'upload_not_found' })

    for (const foreign of strangersUrls(grant, other)) {
      expect(await touch(foreign, 'DELETE')).toEqual(unknown.DELETE)
      // Not even whether the upload exists, nor how far it got.
      expect(await touch(foreign, 'HEAD')).toEqual(unknown.HEAD)
    }

    const head = await fetch(url, { method: 'HEAD', headers: TUS })
    expect(head.status).toBe(200)
    expect(head.headers.get('upload-offset')).toBe(String(SIZE / 2))
    await tusFinish(url, grant, mine)
    expect(await sharedSha(grant)).toBe(sha(mine))
  })
})
