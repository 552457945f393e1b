import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { Readable } from 'node:stream'
import { ZSettings } from '../../src/domain/settings.ts'
import { StorageRegistry } from '../../src/domain/storage.ts'
import { BlobDriver } from '../../src/drivers/blob-driver.ts'
import { isOutOfSpace } from '../../src/drivers/out-of-space.ts'

describe('blob store', () => {
  let dir: string
  let store: BlobDriver
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'blob-unit-'))
    store = new BlobDriver({ dir, uploadUrl: '/u', signUpload: () => 't' })
  })
  afterEach(() => rmSync(dir, { recursive: true, force: true }))

  it.each(['../x', 'a/../../x', '/etc/passwd', 'a\u0000b', 'a\\b', '.tmp/x', 'a//b', ''])(
    'when the pathname is %j, then it cannot be resolved',
    (p) => expect(() => store.resolve(p)).toThrow(expect.objectContaining({ code: 'file_not_found' })),
  )

  it('when objects are put, then stat, read, list and delete see them; no overwrite unless allowed', async () => {
    await store.put('p1/a.txt', Readable.from([Buffer.from('hello')]), {
      maxBytes: 10,
      allowOverwrite: false,
    })
    expect(await store.stat('p1/a.txt')).toMatchObject({ size: 5 })
    const { stream, size } = await store.openRead('p1/a.txt')
    expect(size).toBe(5)
    const chunks: Buffer[] = []
    for await (const c of stream) chunks.push(c as Buffer)
    expect(Buffer.concat(chunks).toString()).toBe('hello')
    await expect(
      store.put('p1/a.txt', Readable.from([Buffer.from('x')]), { maxBytes: 10, allowOverwrite: false }),
    ).rejects.toMatchObject({ code: 'upload_exists' })
    await store.put('p1/a.txt', Readable.from([Buffer.from('xy')]), { maxBytes: 10, allowOverwrite: true })
    expect(await store.stat('p1/a.txt')).toMatchObject({ size: 2 })
    const listed = []
    for await (const o of store.list()) listed.push(o.pathname)
    expect(listed).toEqual(['p1/a.txt'])
    await store.delete('p1/a.txt')
    expect(await store.stat('p1/a.txt')).toBeNull()
    await store.delete('p1/a.txt')
  })

  it('when a put exceeds its cap, then it fails with file_too_large and leaves nothing', async () => {
    const body = Readable.from([Buffer.alloc(6), Buffer.alloc(6)])
    await expect(store.put('p2/b.bin', body, { maxBytes: 10, allowOverwrite: false })).rejects.toMatchObject({
      code: 'file_too_large',
    })
    expect(await store.stat('p2/b.bin')).toBeNull()
  })
})

describe('storage registry', () => {
  it('when several instances of one kind are added, then the first is the default and each is found by id', () => {
    const a = new BlobDriver({ dir: '/tmp/a', uploadUrl: '/u', signUpload: () => 't', instance: 'blob' })
    const b = new BlobDriver({ dir: '/tmp/b', uploadUrl: '/u', signUpload: () => 't', instance: 'blob-2' })
    const registry = new StorageRegistry([a, b])
    expect(registry.defaultFor('blob')).toBe(a)
    expect(registry.instance('blob-2')).toBe(b)
    expect(registry.defaultFor('bucket')).toBeUndefined()
    expect(registry.enabledKinds()).toEqual(['blob'])
    expect(() => registry.add(a)).toThrow('storage instance blob exists')
  })
})

describe('settings', () => {
  it('when nothing is stored, then the defaults are the documented ones', () => {
    expect(ZSettings.parse({})).toEqual({
      defaultExpireDays: 7,
      maxExpireDays: 30,
      defaultMaxDownloads: 10,
      maxDownloadsCap: 100,
      maxFileSizeBytes: 1048576000,
      codeLength: 12,
      unlimitedEnabled: false,
      takeFailuresPerIp: 10,
      takeFailuresGlobal: 600,
      takeFailureWindowSeconds: 600,
      guessThrottlePerMinute: 30,
      passwordFailuresPerIp: 10,
      passwordFailuresPerShare: 20,
      passwordFailureWindowSeconds: 900,
      loginAttemptsPerIp: 5,
      loginWindowSeconds: 900,
      loginFailuresPerAccount: 20,
      loginFailuresGlobal: 100,
      loginBackoffMaxSeconds: 60,
      previewEnabled: true,
      previewMaxBytes: 20_971_520,
    })
  })
})

describe('out of space', () => {
  it.each([
    [
      'ENOSPC from a write',
      Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
    ],
    ['a filesystem quota', Object.assign(new Error('EDQUOT'), { code: 'EDQUOT' })],
    [
      "git's local cache",
      Object.assign(new Error('git hash-object failed (128)'), {
        stderr: 'error: unable to write loose object file: No space left on device',
      }),
    ],
    [
      'a git remote over its quota',
      Object.assign(new Error('git push failed'), { stderr: 'remote: error: Disk quota exceeded' }),
    ],
    [
      'a full MinIO',
      Object.assign(new Error('Storage backend has reached its minimum free drive threshold.'), {
        code: 'XMinioStorageFull',
      }),
    ],
    [
      'a cause further down',
      new Error('upload failed', { cause: Object.assign(new Error('x'), { code: 'ENOSPC' }) }),
    ],
  ])('when the store says %s, then it is out of space (507)', (_, err) => {
    expect(isOutOfSpace(err)).toBe(true)
  })

  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
    [
      'a git error of another kind',
      Object.assign(new Error('git push failed'), { stderr: 'rejected: non-fast-forward' }),
    ],
    ['nothing', undefined],
  ])('when the store says %s, then it is not', (_, err) => {
    expect(isOutOfSpace(err)).toBe(false)
  })
})
