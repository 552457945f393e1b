import { createHash, randomBytes } from 'node:crypto'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'
import { decryptStream } from '../../web/src/crypto/decrypt-stream.ts'
import { bodyKeys, cipherSize, plainSize } from '../../web/src/crypto/ece.ts'
import { EncryptedSource } from '../../web/src/crypto/encrypted-source.ts'
import { shareEncryption } from '../../web/src/crypto/keys.ts'
const ece = require('http_ece') as {
  decrypt(buffer: Buffer, params: { version: string; key: string }): Buffer
  encrypt(buffer: Buffer, params: { version: string; key: string; salt: string; rs: number }): Buffer
}

// Issue 47 item 2: the pages' RFC 8188 `aes128gcm` is the published format — what they write
// decrypts with http_ece (an independent implementation), what http_ece writes the pages
// decrypt — and every range of a body is made the same way again (a resumed upload). The server
// takes an encrypted share only with sizes an aes128gcm body can have, and says it is encrypted.

const deps = testDeps()
let h: Harness

beforeAll(async () => {
  h = await startHarness(deps)
})
afterAll(async () => {
  await h?.close()
})

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')

async function seal(data: Buffer, ikm: Uint8Array<ArrayBuffer>, rs: number) {
  const source = new EncryptedSource(
    new Blob([new Uint8Array(data)]),
    await bodyKeys(ikm, new Uint8Array(randomBytes(16)), rs),
  )
  return { source, body: Buffer.from(await source.bytes(0, source.size)) }
}

async function open(body: Buffer, ikm: Uint8Array<ArrayBuffer>, chunk: number): Promise<Buffer> {
  const input = new ReadableStream<Uint8Array>({
    start(c) {
      for (let at = 0; at < body.length; at += chunk) c.enqueue(new Uint8Array(body.subarray(at, at + chunk)))
      c.close()
    },
  })
  const parts: Uint8Array[] = []
  const reader = input.pipeThrough(decryptStream(ikm)).getReader()
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value)
  return Buffer.concat(parts)
}

describe('the aes128gcm bodies of encrypted shares', () => {
  it('when the pages encrypt files of every edge size, then http_ece decrypts each to the very bytes and the sizes are as computed', async () => {
    const rs = 1024
    const ikm = new Uint8Array(randomBytes(16))
    for (const size of [0, 1, rs - 17, rs - 16, 2 * (rs - 17), 5 * (rs - 17) + 3, 100_000]) {
      const data = randomBytes(size)
      const { body } = await seal(data, ikm, rs)
      expect(body.length).toBe(cipherSize(size, rs))
      expect(plainSize(body.length, rs)).toBe(size)
      const plain = ece.decrypt(body, { version: 'aes128gcm', key: Buffer.from(ikm).toString('base64url') })
      expect(sha(plain)).toBe(sha(data))
    }
  })

  it('when any range of a body is asked again (a resumed upload), then it is the same bytes as the whole body has there', async () => {
    const data = randomBytes(300_000)
    const { source, body } = await seal(data, new Uint8Array(randomBytes(16)), 4096)
    for (const [a, b] of [
      [0, 10],
      [15, 30],
      [21, 4117],
      [4000, 4200],
      [123_457, 200_001],
      [body.length - 5, body.length + 100],
    ] as const) {
      expect(Buffer.from(await source.bytes(a, b)).equals(body.subarray(a, b))).toBe(true)
    }
  })

  it('when a file is read as tus-js-client reads it (8 MiB a request), then each request reads only the records it touches, never the whole file', async () => {
    const seen: Array<[number, number]> = []
    class Watched extends Blob {
      override slice(start?: number, end?: number, type?: string): Blob {
        seen.push([start ?? 0, end ?? this.size])
        return super.slice(start, end, type)
      }
    }
    const size = 20 * 1024 * 1024 + 777
    const data = randomBytes(size)
    const ikm = new Uint8Array(randomBytes(16))
    const keys = await bodyKeys(ikm, new Uint8Array(randomBytes(16)), 65_536)
    const source = new EncryptedSource(new Watched([new Uint8Array(data)]), keys)
    const chunk = 8 * 1024 * 1024
    const parts: Buffer[] = []
    for (let at = 0; at < source.size; at += chunk) {
      const { value, done } = await source.slice(at, at + chunk)
      parts.push(Buffer.from(await value.arrayBuffer()))
      expect(done).toBe(at + chunk >= source.size)
    }
    expect(Math.max(...seen.map(([a, b]) => b - a))).toBeLessThanOrEqual(chunk + 2 * 65_519)
    const read = seen.reduce((n, [a, b]) => n + Math.min(b, size) - a, 0)
    expect(read).toBeLessThan(size + 3 * 65_519)
    const plain = ece.decrypt(Buffer.concat(parts), {
      version: 'aes128gcm',
      key: Buffer.from(ikm).toString('base64url'),
    })
    expect(sha(plain)).toBe(sha(data))
  })

  it('when http_ece encrypts, then the pages decrypt it in any chunking; a body cut short or changed is refused', async () => {
    const ikm = randomBytes(16)
    const data = randomBytes(70_000)
    const body = ece.encrypt(data, {
      version: 'aes128gcm',
      key: ikm.toString('base64url'),
      salt: randomBytes(16).toString('base64url'),
      rs: 4096,
    })
    for (const chunk of [7, 4096, 65_536])
      expect(sha(await open(body, new Uint8Array(ikm), chunk))).toBe(sha(data))
    // Cut at a record's end: the last record left is not marked last.
    await expect(open(body.subarray(0, 21 + 4096 * 3), new Uint8Array(ikm), 999)).rejects.toThrow()
    const changed = Buffer.from(body)
    changed[5000] = changed[5000]! ^ 1
    await expect(open(changed, new Uint8Array(ikm), 999)).rejects.toThrow()
    await expect(open(body, new Uint8Array(randomBytes(16)), 999)).rejects.toThrow()
  })
})

describe('encrypted shares in the API', () => {
  it('when a share is encrypted, then take gives its parameters, the admin list says encrypted, and a size no body can have or a stored header not of its record size is a 400', async () => {
    const ikm = new Uint8Array(randomBytes(16))
    const { body } = await seal(randomBytes(5000), ikm, 65_536)
    const encryption = await shareEncryption(ikm, [{ name: 'secret plan.txt', type: 'text/plain' }])
    const up = await uploadFile(h, { name: 'encrypted-1.bin', data: body })
    // Below a header and one record, or a record after a full one too short for its tag: no
    // plaintext length gives these sizes.
    const wrong = await api(h, 'POST', '/api/share', {
      files: [up.file, { ...up.file, size: 37 }, { ...up.file, size: 21 + 65_536 + 16 }],
      encryption,
    })
    expect(wrong.status).toBe(400)
    expect(wrong.body.error.details.issues.map((i: { field: string }) => i.field)).toEqual([
      'body.files.1.size',
      'body.files.2.size',
    ])
    const noKdf = await api(h, 'POST', '/api/share', {
      files: [up.file],
      encryption: { ...encryption, key: 'passphrase' },
    })
    expect(noKdf.status).toBe(400)
    const withKey = await api(h, 'POST', '/api/share', {
      files: [up.file],
      encryption: { ...encryption, k: 'x' },
    })
    expect(withKey.status).toBe(400)

    // The stored header must say the share's record size and no key id; bytes that are no
    // aes128gcm body are refused as well, and the file stays unshared.
    const otherRs = (await seal(randomBytes(5000), ikm, 4096)).body
    const noise = randomBytes(body.length)
    for (const data of [otherRs, noise]) {
      const bad = await uploadFile(h, { name: 'encrypted-1.bin', data })
      const refused = await api(h, 'POST', '/api/share', { files: [bad.file], encryption })
      expect(refused.status).toBe(400)
      expect(refused.body.error.message).toMatch(
        /^body\.files\.0: not an aes128gcm body with records of 65536 bytes/,
      )
    }

    const made = await api(h, 'POST', '/api/share', { files: [up.file], encryption })
    expect(made.status).toBe(200)
    const taken = await api(h, 'POST', '/api/take', { code: made.body.code })
    expect(taken.body.encryption).toEqual(encryption)
    expect(taken.body.manifest.files[0].size).toBe(body.length)
    const admin = await adminLogin(h)
    const listed = await api(h, 'GET', `/api/admin/shares?q=${made.body.code}`, undefined, admin)
    expect(listed.body.items[0]).toMatchObject({ code: made.body.code, encrypted: true, protected: false })

    // A share without encryption answers as before: no `encryption` key at all.
    const plain = await uploadFile(h, { name: 'plain.txt', data: Buffer.from('hello') })
    const made2 = await api(h, 'POST', '/api/share', { files: [plain.file] })
    const taken2 = await api(h, 'POST', '/api/take', { code: made2.body.code })
    expect(Object.keys(taken2.body).sort()).toEqual(['manifest', 'remaining'])
    const listed2 = await api(h, 'GET', `/api/admin/shares?q=${made2.body.code}`, undefined, admin)
    expect(listed2.body.items[0].encrypted).toBe(false)
  })
})
