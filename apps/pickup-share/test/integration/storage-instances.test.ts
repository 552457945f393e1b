import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { fixedClock } from '@quartet/core/clock'
import { adminLogin, api, type Harness, startHarness, testDeps, uploadFile } from '../support/harness.ts'

const deps = testDeps()
const clock = fixedClock(new Date())
const MB = 1024 * 1024
const SECRET = 'sk-never-show-me-4f7c1e0b9a'
let h: Harness
let admin: Record<string, string>

beforeAll(async () => {
  h = await startHarness(deps, { clock })
  admin = await adminLogin(h)
})
afterAll(async () => {
  await h.close()
})

const stores = async () => (await api(h, 'GET', '/api/admin/stores', undefined, admin)).body.items as any[] // eslint-disable-line @typescript-eslint/no-explicit-any
const storeNamed = async (name: string) => (await stores()).find((s) => s.name === name)
const askMany = (n: number, size: number) =>
  Promise.all(
    Array.from({ length: n }, (_, i) =>
      api(h, 'POST', '/api/upload', { store: 'blob', name: `part-${i}.bin`, size }),
    ),
  )

describe('storage instances with quotas', () => {
  it('when the admin lists stores, then the built-in blob instance is there with used and reserved bytes', async () => {
    const blob = await storeNamed('blob')
    expect(blob).toMatchObject({
      kind: 'blob',
      builtin: true,
      enabled: true,
      quotaBytes: null,
      available: true,
    })
    expect(typeof blob.usedBytes).toBe('number')
    expect(typeof blob.reservedBytes).toBe('number')
    expect((await api(h, 'GET', '/api/admin/stores')).status).toBe(401)
  })

  it('when 5 concurrent 3 MB permissions hit an instance with 10 MB left, then at most 3 are granted, and again after cleanup', async () => {
    expect((await api(h, 'POST', '/api/admin/stores', { name: 'blob', enabled: false }, admin)).status).toBe(
      200,
    )
    const created = await api(
      h,
      'POST',
      '/api/admin/stores',
      { name: 'quota-ten', kind: 'blob', quotaBytes: 10 * MB },
      admin,
    )
    expect(created.status).toBe(201)
    expect(created.body).toMatchObject({
      name: 'quota-ten',
      quotaBytes: 10 * MB,
      usedBytes: 0,
      reservedBytes: 0,
    })

    const first = await askMany(5, 3 * MB)
    const granted = first.filter((r) => r.status === 200)
    expect(granted).toHaveLength(3)
    for (const r of first.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(507)
      expect(r.body.error.code).toBe('store_full')
    }
    expect(await storeNamed('quota-ten')).toMatchObject({ reservedBytes: 9 * MB, freeBytes: 1 * MB })

    // Nothing was uploaded: past ORPHAN_AFTER_HOURS cleanup gives the reservations back.
    clock.advance(25 * 3_600_000)
    admin = await adminLogin(h) // the session's absolute lifetime passed too
    expect((await api(h, 'POST', '/api/admin/shares', { action: 'cleanup' }, admin)).status).toBe(200)
    expect(await storeNamed('quota-ten')).toMatchObject({ reservedBytes: 0, freeBytes: 10 * MB })

    const second = await askMany(5, 3 * MB)
    expect(second.filter((r) => r.status === 200)).toHaveLength(3)
    clock.advance(25 * 3_600_000)
    admin = await adminLogin(h)
    await api(h, 'POST', '/api/admin/shares', { action: 'cleanup' }, admin)
  })

  it('when a file is shared, then its reservation becomes used bytes of the real size, freed when the share goes', async () => {
    await api(h, 'POST', '/api/admin/stores', { name: 'sized', kind: 'blob', quotaBytes: 1 * MB }, admin)
    await api(h, 'POST', '/api/admin/stores', { name: 'quota-ten', enabled: false }, admin)
    const data = randomBytes(200_000)
    const { file, uploadStatus } = await uploadFile(h, { name: 'a.bin', data })
    expect(uploadStatus).toBe(201)
    expect(await storeNamed('sized')).toMatchObject({ reservedBytes: 200_000, usedBytes: 0 })
    const shared = await api(h, 'POST', '/api/share', { files: [file], maxDownloads: 1 })
    expect(shared.status).toBe(200)
    expect(await storeNamed('sized')).toMatchObject({
      reservedBytes: 0,
      usedBytes: 200_000,
      freeBytes: MB - 200_000,
    })
    // Issue 42: the receiver's transfer stays open until its window ends or its budget (3 copies)
    // is spent; the download that spends it is the share's last, which deletes the share.
    for (let copy = 0; copy < 3; copy++) {
      const res = await fetch(
        `${h.url}/api/download?code=${shared.body.code}&path=${encodeURIComponent(file.pathname)}`,
      )
      expect(Buffer.from(await res.arrayBuffer()).equals(data)).toBe(true)
    }
    // The last download deletes the share; its bytes are free again.
    for (let i = 0; i < 50 && (await storeNamed('sized')).usedBytes !== 0; i++)
      await new Promise((r) => setTimeout(r, 20))
    expect(await storeNamed('sized')).toMatchObject({ usedBytes: 0, reservedBytes: 0 })
    // A file larger than the room left is refused at permission time.
    const big = await api(h, 'POST', '/api/upload', { store: 'blob', name: 'big.bin', size: 2 * MB })
    expect(big.status).toBe(507)
  })

  it('when an instance with live files is deleted, then it is refused unless forced, and forced deletes the shares first', async () => {
    const data = randomBytes(1000)
    const { file } = await uploadFile(h, { name: 'keep.txt', data, type: 'text/plain' })
    const shared = await api(h, 'POST', '/api/share', { files: [file] })
    expect(shared.status).toBe(200)
    const refused = await api(h, 'DELETE', '/api/admin/stores', { name: 'sized' }, admin)
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe('store_in_use')
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).status).toBe(200)

    const sized = await storeNamed('sized')
    const folder = path.join(h.config.BLOB_DIR, '.instances', sized.id, file.pathname)
    expect(existsSync(folder)).toBe(true)
    const forced = await api(h, 'DELETE', '/api/admin/stores', { name: 'sized', force: true }, admin)
    expect(forced.status).toBe(200)
    expect(forced.body).toMatchObject({ deleted: true, deletedShares: 1 })
    expect((await api(h, 'POST', '/api/take', { code: shared.body.code })).status).toBe(404)
    expect(existsSync(folder)).toBe(false)
    expect(await storeNamed('sized')).toBeUndefined()
  })

  it('when a built-in instance is deleted or its settings changed, then 409 store_builtin', async () => {
    const del = await api(h, 'DELETE', '/api/admin/stores', { name: 'blob' }, admin)
    expect(del.status).toBe(409)
    expect(del.body.error.code).toBe('store_builtin')
    const put = await api(h, 'POST', '/api/admin/stores', { name: 'blob', settings: {} }, admin)
    expect(put.status).toBe(409)
    expect((await api(h, 'DELETE', '/api/admin/stores', { name: 'nope' }, admin)).status).toBe(404)
  })

  it('when settings are invalid or the kind is missing, then 400 and nothing is saved', async () => {
    const before = (await stores()).length
    const cases = [
      { name: 'b1', settings: {} },
      { name: 'b2', kind: 'bucket', settings: { endpoint: 'ftp://x', bucket: 'abc' } },
      { name: 'b3', kind: 'bucket', settings: { endpoint: 'http://127.0.0.1:9', bucket: 'abc', extra: 1 } },
      { name: 'b4', kind: 'blob', quotaBytes: -1 },
      { name: 'Bad Name', kind: 'blob' },
      { name: 'b5', kind: 'floppy' },
    ]
    for (const body of cases) {
      const res = await api(h, 'POST', '/api/admin/stores', body, admin)
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('bad_request')
    }
    expect(await stores()).toHaveLength(before)
  })

  it('when a repo instance has download mirrors of its own, then they are checked, kept, and used for it instead of REPO_MIRRORS', async () => {
    const repo = (name: string, mirrors: unknown) => ({
      name,
      kind: 'repo',
      enabled: false,
      settings: { remoteUrl: 'https://git.example.test/acme/drop.git', mirrors },
    })
    for (const mirrors of [
      ['ftp://cdn.example.test/{sha}/{path}'],
      ['https://cdn.example.test/{sha}'],
      'x',
    ]) {
      const res = await api(h, 'POST', '/api/admin/stores', repo('r-bad', mirrors), admin)
      expect(res.status).toBe(400)
      expect(res.body.error.code).toBe('bad_request')
    }
    const template = 'https://cdn.example.test/gh/{owner}/{repo}@{sha}/{path}'
    const made = await api(h, 'POST', '/api/admin/stores', repo('r-own', [template]), admin)
    expect(made.status).toBe(201)
    expect(made.body.settings.mirrors).toEqual([template])
    const driver = h.services.storage.instance(made.body.id) as unknown as {
      options: { mirrors: { templates: string[] } | null }
    }
    expect(driver.options.mirrors?.templates).toEqual([template])
    // An empty list: no mirrors for this one, whatever the operator configured.
    const none = await api(h, 'POST', '/api/admin/stores', repo('r-none', []), admin)
    expect(none.status).toBe(201)
    const bare = h.services.storage.instance(none.body.id) as unknown as { options: { mirrors: unknown } }
    expect(bare.options.mirrors).toBeNull()
  })

  it('when a bucket instance is created with credentials, then no response or audit entry shows them', async () => {
    const body = {
      name: 'other-bucket',
      kind: 'bucket',
      quotaBytes: 5 * MB,
      enabled: false,
      settings: {
        endpoint: 'http://127.0.0.1:9',
        bucket: 'shares',
        accessKey: 'AKIA-secret-id',
        secretKey: SECRET,
      },
    }
    const created = await api(h, 'POST', '/api/admin/stores', body, admin)
    expect(created.status).toBe(201)
    expect(created.body.credentialsSet.sort()).toEqual(['accessKey', 'secretKey'])
    expect(created.body.settings).toMatchObject({ endpoint: 'http://127.0.0.1:9', bucket: 'shares' })
    // Changing the quota without credentials keeps them.
    const changed = await api(
      h,
      'POST',
      '/api/admin/stores',
      {
        name: 'other-bucket',
        settings: { endpoint: 'http://127.0.0.1:10', bucket: 'shares' },
        quotaBytes: 6 * MB,
      },
      admin,
    )
    expect(changed.status).toBe(200)
    expect(changed.body.credentialsSet.sort()).toEqual(['accessKey', 'secretKey'])
    const everything = JSON.stringify([
      created.body,
      changed.body,
      await stores(),
      (await api(h, 'GET', '/api/admin/audit', undefined, admin)).body,
    ])
    expect(everything).not.toContain(SECRET)
    expect(everything).not.toContain('AKIA-secret-id')
    expect(everything).toContain('store.create')
  })
})
