import { createHash, randomBytes } from 'node:crypto'
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
