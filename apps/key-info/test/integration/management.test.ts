import { request } from '@quartet/core/testing'
import { fixedClock } from '@quartet/core/clock'
import { randomBytes } from 'node:crypto'
import { hashToken } from '@quartet/core/auth'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'
import { ZCreatedKey, ZKeyList } from '../../src/http/keys.ts'

const deps = useKeyInfoDeps()
const NOW = '2026-11-22T12:00:00.000Z'
const app = () => buildApp(deps, { clock: fixedClock(NOW) })

async function admin() {
  return mintKey(deps, { isManagementKey: true })
}

/** A lookup key good enough for OpenRouter's rule: 64 random-looking hex digits. */
const LOOKUP_KEY = randomBytes(32).toString('hex')

const keyCount = (workspaceId: string) => deps.db.apiKey.count({ where: { workspaceId } })

describe('management keys: authorization', () => {
  const routes: Array<
    [string, (hash: string) => [method: 'get' | 'post' | 'patch' | 'delete', path: string, body?: object]]
  > = [
    ['GET /api/v1/keys', () => ['get', '/api/v1/keys']],
    ['POST /api/v1/keys', () => ['post', '/api/v1/keys', { name: 'x' }]],
    ['GET /api/v1/keys/:hash', (h) => ['get', `/api/v1/keys/${h}`]],
    ['PATCH /api/v1/keys/:hash', (h) => ['patch', `/api/v1/keys/${h}`, { name: 'y' }]],
    ['DELETE /api/v1/keys/:hash', (h) => ['delete', `/api/v1/keys/${h}`]],
    [
      'POST /api/v1/usage',
      (h) => ['post', '/api/v1/usage', { events: [{ id: 'a', key_hash: h, amount: 1 }] }],
    ],
  ]

  it.each(routes)(
    'when %s is called without a key, then 401 Missing Authentication header',
    async (_n, route) => {
      const [method, path, body] = route('a'.repeat(64))
      const res = await request(app())[method](path).send(body)
      expect(res.status).toBe(401)
      expect(res.body).toEqual({ error: { code: 401, message: 'Missing Authentication header' } })
    },
  )

  it.each(routes)('when %s is called with a normal key, then 403 and nothing changes', async (_n, route) => {
    const normal = await mintKey(deps)
    const [method, path, body] = route(normal.hash)
    const res = await request(app())[method](path).set(bearer(normal.key)).send(body)
    expect(res.status).toBe(403)
    expect(res.body).toEqual({
      error: { code: 403, message: 'Only management keys can perform this operation' },
    })
    expect(await keyCount(normal.workspaceId)).toBe(1)
    expect((await deps.db.apiKey.findUniqueOrThrow({ where: { hash: normal.hash } })).name).toBe('test key')
  })

  it.each(routes)(
    'when %s is called with a disabled management key, then 401 API key disabled',
    async (_n, route) => {
      const mk = await admin()
      await deps.db.apiKey.update({ where: { hash: mk.hash }, data: { disabled: true } })
      const [method, path, body] = route(mk.hash)
      const res = await request(app())[method](path).set(bearer(mk.key)).send(body)
      expect(res.body).toEqual({ error: { code: 401, message: 'API key disabled' } })
    },
  )
})

describe('management keys: CRUD', () => {
  it('when a key is created, then 201 returns the plaintext once, stored only as its SHA-256', async () => {
    const mk = await admin()
    const res = await request(app())
      .post('/api/v1/keys')
      .set(bearer(mk.key))
      .send({
        name: 'ci runner',
        limit: 12.5,
        limit_reset: 'weekly',
        include_byok_in_limit: true,
        expires_at: '2027-01-01T00:00:00Z',
        is_free_tier: true,
        allowed_data_regions: ['europe'],
        free_model_daily_limit: 20,
      })
      .expect(201)
    expect(res.headers['cache-control']).toBe('no-store')
    const body = ZCreatedKey.parse(res.body)
    expect(body.key).toMatch(/^sk-qk-v1-[0-9a-f]{64}$/) // 256 bits
    expect(body.data).toMatchObject({
      hash: hashToken(body.key),
      name: 'ci runner',
      disabled: false,
      limit: 12.5,
      limit_remaining: 12.5,
      limit_reset: 'weekly',
      include_byok_in_limit: true,
      is_management_key: false,
      is_free_tier: true,
      allowed_data_regions: ['europe'],
      free_model_daily_limit: 20,
      expires_at: '2027-01-01T00:00:00.000Z',
      workspace_id: mk.workspaceId,
      creator_user_id: 'test-user',
      external_user: null,
      usage: 0,
    })
    expect(body.data.label).not.toContain(body.key.slice(9))
    const stored = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: body.data.hash } })
    expect(JSON.stringify(stored, (_k, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(body.key)
    // The new key works, and reading it back never shows the plaintext again.
    await request(app()).get('/api/v1/key').set(bearer(body.key)).expect(200)
    const again = await request(app()).get(`/api/v1/keys/${body.data.hash}`).set(bearer(mk.key)).expect(200)
    expect(again.text).not.toContain(body.key)
    expect(again.body.data).toEqual(body.data)
  })

  it('when keys are listed, then the page holds the workspace keys, newest first, disabled ones only on request', async () => {
    const mk = await admin()
    const created: string[] = []
    for (const name of ['one', 'two', 'three']) {
      const res = await request(app()).post('/api/v1/keys').set(bearer(mk.key)).send({ name }).expect(201)
      created.push(res.body.data.hash)
    }
    await request(app())
      .patch(`/api/v1/keys/${created[1]}`)
      .set(bearer(mk.key))
      .send({ disabled: true })
      .expect(200)
    const list = ZKeyList.parse(
      (await request(app()).get('/api/v1/keys').set(bearer(mk.key)).expect(200)).body,
    )
    expect(list.data.map((k) => k.name).sort()).toEqual(['one', 'test key', 'three'])
    const all = await request(app()).get('/api/v1/keys?include_disabled=true').set(bearer(mk.key)).expect(200)
    expect(all.body.data).toHaveLength(4)
    const page = await request(app())
      .get('/api/v1/keys?include_disabled=true&offset=1&limit=2')
      .set(bearer(mk.key))
      .expect(200)
    expect(page.body.data.map((k: { hash: string }) => k.hash)).toEqual(
      all.body.data.slice(1, 3).map((k: { hash: string }) => k.hash),
    )
  })

  it('when a key is patched, then the allowed fields change and updated_at moves', async () => {
    const mk = await admin()
    const target = await mintKey(deps, { workspaceId: mk.workspaceId })
    const res = await request(app())
      .patch(`/api/v1/keys/${target.hash}`)
      .set(bearer(mk.key))
      .send({
        name: 'renamed',
        limit: 3,
        limit_reset: 'daily',
        include_byok_in_limit: true,
        expires_at: '2030-05-05T05:05:05.500Z',
        allowed_data_regions: ['global', 'us'],
      })
      .expect(200)
    expect(res.body.data).toMatchObject({
      name: 'renamed',
      limit: 3,
      limit_reset: 'daily',
      include_byok_in_limit: true,
      expires_at: '2030-05-05T05:05:05.500Z',
      allowed_data_regions: ['global', 'us'],
      updated_at: NOW,
    })
    const cleared = await request(app())
      .patch(`/api/v1/keys/${target.hash}`)
      .set(bearer(mk.key))
      .send({ limit: null, limit_reset: null, expires_at: null })
      .expect(200)
    expect(cleared.body.data).toMatchObject({
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      expires_at: null,
    })
  })

  it('when a key is deleted, then {deleted:true}, it stops working, and a second delete is 404', async () => {
    const mk = await admin()
    const target = await mintKey(deps, { workspaceId: mk.workspaceId })
    const res = await request(app()).delete(`/api/v1/keys/${target.hash}`).set(bearer(mk.key)).expect(200)
    expect(res.body).toEqual({ deleted: true })
    await request(app()).get('/api/v1/key').set(bearer(target.key)).expect(401)
    const again = await request(app()).delete(`/api/v1/keys/${target.hash}`).set(bearer(mk.key)).expect(404)
    expect(again.body).toEqual({ error: { code: 404, message: expect.any(String) } })
  })

  it('when an unknown hash is asked for, then GET, PATCH and DELETE are 404', async () => {
    const mk = await admin()
    const h = 'c'.repeat(64)
    await request(app()).get(`/api/v1/keys/${h}`).set(bearer(mk.key)).expect(404)
    await request(app()).patch(`/api/v1/keys/${h}`).set(bearer(mk.key)).send({ name: 'n' }).expect(404)
    await request(app()).delete(`/api/v1/keys/${h}`).set(bearer(mk.key)).expect(404)
  })
})

describe("management keys: OpenRouter's create parameters", () => {
  it('when external.user, creator_user_id and the own workspace_id are given, then the key carries them, stored and listed', async () => {
    const mk = await admin()
    const res = await request(app())
      .post('/api/v1/keys')
      .set(bearer(mk.key))
      .send({
        name: 'partner key',
        workspace_id: mk.workspaceId.toUpperCase(),
        creator_user_id: 'user_2yOPcMpKoQhcd4bVgSMlELRaIah',
        external: { user: 'partner-user-123' },
      })
      .expect(201)
    expect(res.body.data).toMatchObject({
      workspace_id: mk.workspaceId,
      creator_user_id: 'user_2yOPcMpKoQhcd4bVgSMlELRaIah',
      external_user: 'partner-user-123',
    })
    const stored = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: res.body.data.hash } })
    expect(stored).toMatchObject({
      externalUser: 'partner-user-123',
      creatorUserId: 'user_2yOPcMpKoQhcd4bVgSMlELRaIah',
    })
    const listed = await request(app())
      .get(`/api/v1/keys?workspace_id=${mk.workspaceId}`)
      .set(bearer(mk.key))
      .expect(200)
    expect(listed.body.data.find((k: { hash: string }) => k.hash === res.body.data.hash)).toEqual(
      res.body.data,
    )
  })

  it("when creator_user_id is null or absent, then the key is attributed to the caller's creator", async () => {
    const mk = await admin()
    for (const body of [{ name: 'a' }, { name: 'b', creator_user_id: null }]) {
      const res = await request(app()).post('/api/v1/keys').set(bearer(mk.key)).send(body).expect(201)
      expect(res.body.data).toMatchObject({ creator_user_id: 'test-user', external_user: null })
    }
  })

  it('when another workspace is named, then create and list are 404 like a missing one, and nothing is written', async () => {
    const mine = await admin()
    const theirs = await admin()
    for (const workspace of [theirs.workspaceId, '00000000-0000-4000-8000-000000000000']) {
      const created = await request(app())
        .post('/api/v1/keys')
        .set(bearer(mine.key))
        .send({ name: 'x', workspace_id: workspace })
        .expect(404)
      expect(created.body).toEqual({ error: { code: 404, message: `no workspace ${workspace}` } })
      const listed = await request(app())
        .get(`/api/v1/keys?workspace_id=${workspace}`)
        .set(bearer(mine.key))
        .expect(404)
      expect(listed.body).toEqual({ error: { code: 404, message: `no workspace ${workspace}` } })
    }
    expect(await keyCount(mine.workspaceId)).toBe(1)
    expect(await keyCount(theirs.workspaceId)).toBe(1)
  })
})

describe('management keys: external.api_key, a partner lookup key', () => {
  it('when a key is created with one, then only its SHA-256 is stored and no answer ever shows it', async () => {
    const mk = await admin()
    const lookup = randomBytes(24).toString('base64url') // 32 characters, 192 bits
    const res = await request(app())
      .post('/api/v1/keys')
      .set(bearer(mk.key))
      .send({ name: 'partner', external: { user: 'partner-user-1', api_key: lookup } })
      .expect(201)
    expect(res.text).not.toContain(lookup)
    const stored = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: res.body.data.hash } })
    expect(stored.externalApiKeyHash).toBe(hashToken(lookup))
    const read = await request(app()).get(`/api/v1/keys/${res.body.data.hash}`).set(bearer(mk.key))
    const listed = await request(app()).get('/api/v1/keys').set(bearer(mk.key))
    expect(read.text + listed.text).not.toContain(lookup)
    expect(read.text + listed.text).not.toContain(hashToken(lookup))
  })

  it('when two workspaces create keys with the same lookup key at once, then exactly one wins and the other is 409', async () => {
    const [a, b] = [await admin(), await admin()]
    const lookup = randomBytes(32).toString('hex')
    const results = await Promise.all(
      [a, b, a, b, a, b].map((mk, i) =>
        request(app())
          .post('/api/v1/keys')
          .set(bearer(mk.key))
          .send({ name: `racer ${i}`, external: { user: 'u', api_key: lookup } }),
      ),
    )
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409])
    for (const r of results.filter((r) => r.status === 409))
      expect(r.body).toEqual({
        error: { code: 409, message: 'external.api_key is already in use by another key' },
      })
    expect(await deps.db.apiKey.count({ where: { externalApiKeyHash: hashToken(lookup) } })).toBe(1)
    expect((await keyCount(a.workspaceId)) + (await keyCount(b.workspaceId))).toBe(3)
  })
})

describe('management keys: workspace isolation', () => {
  it("when a management key reaches for another workspace's key, then it is 404 everywhere and nothing changes", async () => {
    const mine = await admin()
    const theirs = await admin()
    const victim = await mintKey(deps, { workspaceId: theirs.workspaceId })
    await request(app()).get(`/api/v1/keys/${victim.hash}`).set(bearer(mine.key)).expect(404)
    await request(app())
      .patch(`/api/v1/keys/${victim.hash}`)
      .set(bearer(mine.key))
      .send({ disabled: true })
      .expect(404)
    await request(app()).delete(`/api/v1/keys/${victim.hash}`).set(bearer(mine.key)).expect(404)
    const list = await request(app())
      .get('/api/v1/keys?include_disabled=true')
      .set(bearer(mine.key))
      .expect(200)
    expect(list.body.data.map((k: { hash: string }) => k.hash)).toEqual([mine.hash])
    const stored = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: victim.hash } })
    expect(stored.disabled).toBe(false)
    await request(app()).get('/api/v1/key').set(bearer(victim.key)).expect(200)
  })

  it('when a management key creates a key, then it lands in its own workspace', async () => {
    const mk = await admin()
    const res = await request(app()).post('/api/v1/keys').set(bearer(mk.key)).send({ name: 'n' }).expect(201)
    expect(res.body.data.workspace_id).toBe(mk.workspaceId)
  })
})

describe('management keys: bad input is 400 and writes nothing', () => {
  const createCases: Array<[string, object]> = [
    ['no name', {}],
    ['an empty name', { name: '  ' }],
    ['a past expires_at', { name: 'n', expires_at: '2026-11-22T11:59:59Z' }],
    ['expires_at exactly now', { name: 'n', expires_at: NOW }],
    ['a non-UTC expires_at', { name: 'n', expires_at: '2027-01-01T00:00:00+01:00' }],
    ['a date-only expires_at', { name: 'n', expires_at: '2027-01-01' }],
    ['a negative limit', { name: 'n', limit: -1 }],
    ['a string limit', { name: 'n', limit: '10' }],
    ['an unknown limit_reset', { name: 'n', limit_reset: 'yearly' }],
    ['an unknown region', { name: 'n', allowed_data_regions: ['mars'] }],
    ['a repeated region', { name: 'n', allowed_data_regions: ['us', 'us'] }],
    ['no region', { name: 'n', allowed_data_regions: [] }],
    ['a fractional free_model_daily_limit', { name: 'n', free_model_daily_limit: 1.5 }],
    ['an unknown field', { name: 'n', owner: 'me' }],
    ['a wrong type', { name: 'n', is_management_key: 'true' }],
    ['external without its user', { name: 'n', external: {} }],
    ['an empty external.user', { name: 'n', external: { user: ' ' } }],
    ['a 201-character external.user', { name: 'n', external: { user: 'u'.repeat(201) } }],
    ['an unknown field in external', { name: 'n', external: { user: 'u', id: 1 } }],
    ['a malformed workspace_id', { name: 'n', workspace_id: 'default' }],
    ['an empty creator_user_id', { name: 'n', creator_user_id: '' }],
    [
      'a 31-character external.api_key',
      { name: 'n', external: { user: 'u', api_key: LOOKUP_KEY.slice(0, 31) } },
    ],
    ['a one-letter external.api_key', { name: 'n', external: { user: 'u', api_key: 'a'.repeat(64) } }],
    ['a repeated external.api_key', { name: 'n', external: { user: 'u', api_key: 'abcdefgh'.repeat(8) } }],
    ['external.api_key without external.user', { name: 'n', external: { api_key: LOOKUP_KEY } }],
  ]
  it.each(createCases)('when POST /api/v1/keys has %s, then 400', async (_n, body) => {
    const mk = await admin()
    const res = await request(app()).post('/api/v1/keys').set(bearer(mk.key)).send(body)
    expect(res.status).toBe(400)
    expect(res.body).toEqual({ error: { code: 400, message: expect.any(String) } })
    expect(await keyCount(mk.workspaceId)).toBe(1)
  })

  const patchCases: Array<[string, object]> = [
    ['nothing to change', {}],
    ['a past expires_at', { expires_at: '2020-01-01T00:00:00Z' }],
    ['a field PATCH does not accept', { is_management_key: true }],
    ['a non-boolean disabled', { disabled: 'yes' }],
  ]
  it.each(patchCases)('when PATCH has %s, then 400 and the key is unchanged', async (_n, body) => {
    const mk = await admin()
    const target = await mintKey(deps, { workspaceId: mk.workspaceId })
    const before = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: target.hash } })
    const res = await request(app()).patch(`/api/v1/keys/${target.hash}`).set(bearer(mk.key)).send(body)
    expect(res.status).toBe(400)
    expect(res.body.error.code).toBe(400)
    expect(await deps.db.apiKey.findUniqueOrThrow({ where: { hash: target.hash } })).toEqual(before)
  })

  it('when the query is bad, then GET /api/v1/keys is 400', async () => {
    const mk = await admin()
    for (const q of [
      'limit=0',
      'limit=501',
      'offset=-1',
      'include_disabled=maybe',
      'limit=abc',
      'colour=red',
      'workspace_id=default',
    ]) {
      const res = await request(app()).get(`/api/v1/keys?${q}`).set(bearer(mk.key))
      expect([q, res.status]).toEqual([q, 400])
    }
  })

  it('when the hash in the path is malformed, then 400', async () => {
    const mk = await admin()
    await request(app()).get('/api/v1/keys/not-a-hash').set(bearer(mk.key)).expect(400)
  })

  it('when the JSON body is malformed, then 400 and nothing is written', async () => {
    const mk = await admin()
    const res = await request(app())
      .post('/api/v1/keys')
      .set(bearer(mk.key))
      .set('Content-Type', 'application/json')
      .send('{"name": "x",')
      .expect(400)
    expect(res.body).toEqual({ error: { code: 400, message: 'request body is not valid JSON' } })
    expect(await keyCount(mk.workspaceId)).toBe(1)
  })
})
