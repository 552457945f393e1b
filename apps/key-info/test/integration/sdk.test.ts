/**
 * The official OpenRouter TypeScript SDK (`@openrouter/sdk`, pinned in package.json), unmodified,
 * pointed at key-info (`serverURL` = the service's `/api/v1` on a real port): every call of its
 * `apiKeys` group, and every error status key-info answers them with. The SDK validates each
 * response against its own zod schemas, so a field key-info leaves out or types differently fails
 * here as "Response validation failed".
 */
import { randomBytes } from 'node:crypto'
import { OpenRouter } from '@openrouter/sdk'
import {
  BadRequestResponseError,
  ForbiddenResponseError,
  InternalServerResponseError,
  NotFoundResponseError,
  OpenRouterDefaultError,
  OpenRouterError,
  ResponseValidationError,
  TooManyRequestsResponseError,
  UnauthorizedResponseError,
} from '@openrouter/sdk/models/errors'
import { hashToken } from '@quartet/core/auth'
import { fixedClock } from '@quartet/core/clock'
import { request, type RunningServer, silentLogger, startTestServer } from '@quartet/core/testing'
import { type AppConfig, createApp } from '../../src/app.ts'
import { createDb } from '../../src/store/db.ts'
import { bearer, buildApp, mintKey, testConfig, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

/** Wednesday 18 November 2026: this week began Monday the 16th, this month on the 1st. */
const NOW = '2026-11-18T12:00:00.000Z'

let server: RunningServer
beforeAll(async () => {
  server = await startTestServer(buildApp(deps, { clock: fixedClock(NOW) }))
})
afterAll(async () => {
  await server?.close()
})

/** A client as a user would make one; `retryConfig` only where a 5xx must not be retried for an hour. */
function openRouter(apiKey: string | undefined, options: { url?: string; noRetries?: boolean } = {}) {
  return new OpenRouter({
    apiKey,
    serverURL: `${options.url ?? server.url}/api/v1`,
    ...(options.noRetries ? { retryConfig: { strategy: 'none' as const } } : {}),
  })
}

/** The same answer straight off the wire, to compare with what the SDK made of it. */
async function raw(path: string, key: string, url = server.url): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}/api/v1${path}`, { headers: bearer(key) })
  expect(res.status).toBe(200)
  return (await res.json()) as Record<string, unknown>
}

/** What the SDK's schemas turn a key-info object into: camelCase names, expires_at as a Date. */
function asSdkSees(wire: Record<string, unknown>, dropped: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(wire)) {
    if (dropped.includes(name)) continue
    const camel = name.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase())
    out[camel] = name === 'expires_at' && typeof value === 'string' ? new Date(value) : value
  }
  return out
}

/** Fields of key-info's key objects that OpenRouter's do not have: the SDK drops them, nothing else. */
const KEY_INFO_ONLY = ['is_management_key', 'is_free_tier', 'allowed_data_regions', 'free_model_daily_limit']

/** Usage reported through key-info's own ledger (the SDK has no call for it). */
async function reportUsage(
  admin: { key: string },
  events: Array<{
    key_hash: string
    amount: number
    byok?: boolean
    free_model?: boolean
    occurred_at?: string
  }>,
) {
  const res = await request(server.url)
    .post('/api/v1/usage')
    .set(bearer(admin.key))
    .send({ events: events.map((e) => ({ id: randomBytes(8).toString('hex'), ...e })) })
    .expect(200)
  expect(res.body.data.accepted).toBe(events.length)
}

/**
 * The call fails with an HTTP error the SDK parsed, never with a response it could not validate:
 * an OpenRouterError of this status (a typed class, or the SDK's generic OpenRouterDefaultError for
 * a status the operation does not declare), whose typed body is key-info's envelope.
 */
async function apiError(call: Promise<unknown>, status: number): Promise<OpenRouterError> {
  const err = await call.then(
    () => {
      throw new Error(`expected HTTP ${status}, but the call succeeded`)
    },
    (e: unknown) => e,
  )
  if (err instanceof ResponseValidationError) throw new Error(`SDK could not validate: ${err.message}`)
  if (!(err instanceof OpenRouterError)) throw err
  expect(err.statusCode).toBe(status)
  expect(JSON.parse(err.body)).toEqual({ error: { code: status, message: expect.any(String) } })
  if (!(err instanceof OpenRouterDefaultError))
    expect((err as unknown as { error: unknown }).error).toEqual({
      code: status,
      message: expect.any(String),
    })
  return err
}

/** A lookup key that meets OpenRouter's rule (≥ 32 characters, random). */
const lookupKey = () => randomBytes(24).toString('base64url')

describe('OpenRouter SDK apiKeys.getCurrentKeyMetadata()', () => {
  it('when a normal key with spend and free-model requests asks, then the SDK reads every seed field as sent', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const key = await mintKey(deps, {
      workspaceId: admin.workspaceId,
      limitMicros: 25_000_000n,
      limitReset: 'monthly',
      includeByokInLimit: true,
      expiresAt: new Date('2027-01-01T00:00:00.000Z'),
      allowedDataRegions: ['europe', 'us'],
    })
    await reportUsage(admin, [
      { key_hash: key.hash, amount: 1.25, occurred_at: '2026-11-18T01:00:00.000Z' },
      { key_hash: key.hash, amount: 2, occurred_at: '2026-11-02T00:00:00.000Z' },
      { key_hash: key.hash, amount: 0.5, byok: true, occurred_at: '2026-11-17T00:00:00.000Z' },
      { key_hash: key.hash, amount: 0, free_model: true, occurred_at: '2026-11-18T02:00:00.000Z' },
    ])

    const { data } = await openRouter(key.key).apiKeys.getCurrentKeyMetadata()

    const wire = (await raw('/key', key.key)).data as Record<string, unknown>
    expect(data).toEqual(asSdkSees(wire))
    expect(data).toMatchObject({
      label: expect.stringMatching(/^sk-qk-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/),
      limit: 25,
      limitRemaining: 21.25, // 25 − 3.25 this month − 0.5 BYOK this month (include_byok_in_limit)
      limitReset: 'monthly',
      includeByokInLimit: true,
      usage: 3.25,
      usageDaily: 1.25,
      usageWeekly: 1.25,
      usageMonthly: 3.25,
      byokUsage: 0.5,
      byokUsageWeekly: 0.5,
      isFreeTier: false,
      isManagementKey: false,
      isProvisioningKey: false,
      freeModelDailyRequests: { limit: 1000, used: 1, remaining: 999 },
      allowedDataRegions: ['europe', 'us'],
      creatorUserId: 'test-user',
      organizationId: null,
      workspaceId: key.workspaceId,
      expiresAt: new Date('2027-01-01T00:00:00.000Z'),
    })
  })

  it('when a management key asks, then it reads as a management (provisioning) key', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const { data } = await openRouter(admin.key).apiKeys.getCurrentKeyMetadata()
    expect(data).toMatchObject({ isManagementKey: true, isProvisioningKey: true, isFreeTier: false })
    expect(data.limit).toBeNull()
    expect(data.limitRemaining).toBeNull()
    expect(data.expiresAt).toBeNull()
  })

  it('when a free-tier key asks, then it reads as free tier with the free-tier model allowance', async () => {
    const key = await mintKey(deps, { isFreeTier: true })
    const { data } = await openRouter(key.key).apiKeys.getCurrentKeyMetadata()
    expect(data).toMatchObject({
      isFreeTier: true,
      freeModelDailyRequests: { limit: 50, used: 0, remaining: 50 },
    })
  })

  it.each([
    ['an expired key', 'API key expired'],
    ['a disabled key', 'API key disabled'],
    ['an unknown key', 'Invalid API key'],
    ['no key at all', 'Missing Authentication header'],
  ])('when %s asks, then the SDK throws its typed UnauthorizedResponseError', async (kind, message) => {
    let apiKey: string | undefined
    if (kind === 'an expired key')
      apiKey = (await mintKey(deps, { expiresAt: new Date('2026-11-18T11:59:59.999Z') })).key
    else if (kind === 'a disabled key') {
      const key = await mintKey(deps)
      await deps.db.apiKey.update({ where: { hash: key.hash }, data: { disabled: true } })
      apiKey = key.key
    } else if (kind === 'an unknown key') apiKey = `sk-qk-v1-${randomBytes(32).toString('hex')}`

    const err = await apiError(openRouter(apiKey).apiKeys.getCurrentKeyMetadata(), 401)
    expect(err).toBeInstanceOf(UnauthorizedResponseError)
    expect((err as UnauthorizedResponseError).error).toEqual({ code: 401, message })
    expect(err.message).toBe(message)
  })
})

describe('OpenRouter SDK apiKeys.create()', () => {
  it('when every parameter is given, then the key is returned once with data the SDK validates, and it works', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const lookup = lookupKey()
    const created = await openRouter(admin.key).apiKeys.create({
      requestBody: {
        name: 'partner key',
        limit: 12.5,
        limitReset: 'weekly',
        includeByokInLimit: true,
        expiresAt: new Date('2027-03-01T00:00:00.000Z'),
        creatorUserId: 'user_2yOPcMpKoQhcd4bVgSMlELRaIah',
        workspaceId: admin.workspaceId,
        external: { user: 'partner-user-123', apiKey: lookup },
      },
    })

    expect(created.key).toMatch(/^sk-qk-v1-[0-9a-f]{64}$/)
    expect(created.data).toEqual({
      hash: hashToken(created.key),
      name: 'partner key',
      label: expect.stringMatching(/^sk-qk-v1-/),
      disabled: false,
      limit: 12.5,
      limitRemaining: 12.5,
      limitReset: 'weekly',
      includeByokInLimit: true,
      usage: 0,
      usageDaily: 0,
      usageWeekly: 0,
      usageMonthly: 0,
      byokUsage: 0,
      byokUsageDaily: 0,
      byokUsageWeekly: 0,
      byokUsageMonthly: 0,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      expiresAt: new Date('2027-03-01T00:00:00.000Z'),
      creatorUserId: 'user_2yOPcMpKoQhcd4bVgSMlELRaIah',
      externalUser: 'partner-user-123',
      workspaceId: admin.workspaceId,
    })
    // The partner's lookup key is kept as its SHA-256 only and never comes back.
    const stored = await deps.db.apiKey.findUniqueOrThrow({ where: { hash: created.data.hash } })
    expect(stored.externalApiKeyHash).toBe(hashToken(lookup))
    expect(JSON.stringify(created)).not.toContain(lookup)
    // The plaintext works as a key, and is never shown again.
    const self = await openRouter(created.key).apiKeys.getCurrentKeyMetadata()
    expect(self.data).toMatchObject({ limit: 12.5, limitReset: 'weekly', workspaceId: admin.workspaceId })
    const again = await openRouter(admin.key).apiKeys.get({ hash: created.data.hash })
    expect(again.data).toEqual(created.data)
    expect(JSON.stringify(again)).not.toContain(created.key)
  })

  it.each(['daily', 'weekly', 'monthly'] as const)(
    'when limitReset is %s, then the key resets its limit so',
    async (limitReset) => {
      const admin = await mintKey(deps, { isManagementKey: true })
      const { data } = await openRouter(admin.key).apiKeys.create({
        requestBody: { name: `reset ${limitReset}`, limit: 5, limitReset },
      })
      expect(data).toMatchObject({ limit: 5, limitRemaining: 5, limitReset, externalUser: null })
    },
  )

  it("when only a name is given, then OpenRouter's defaults apply: no limit, no expiry, no external user", async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const { data } = await openRouter(admin.key).apiKeys.create({ requestBody: { name: 'plain' } })
    expect(data).toMatchObject({
      limit: null,
      limitRemaining: null,
      limitReset: null,
      includeByokInLimit: false,
      expiresAt: null,
      externalUser: null,
      creatorUserId: 'test-user',
      workspaceId: admin.workspaceId,
    })
  })

  it('when the input is refused, then BadRequestResponseError, and a non-management key gets ForbiddenResponseError', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const sdk = openRouter(admin.key).apiKeys
    const past = await apiError(
      sdk.create({ requestBody: { name: 'n', expiresAt: new Date('2026-11-18T11:00:00.000Z') } }),
      400,
    )
    expect(past).toBeInstanceOf(BadRequestResponseError)
    expect(past.message).toBe('expires_at must be in the future')
    const weak = await apiError(
      sdk.create({ requestBody: { name: 'n', external: { user: 'u', apiKey: 'a'.repeat(40) } } }),
      400,
    )
    expect(weak).toBeInstanceOf(BadRequestResponseError)
    const normal = await mintKey(deps)
    const forbidden = await apiError(
      openRouter(normal.key).apiKeys.create({ requestBody: { name: 'n' } }),
      403,
    )
    expect(forbidden).toBeInstanceOf(ForbiddenResponseError)
    expect(forbidden.message).toBe('Only management keys can perform this operation')
    expect(await deps.db.apiKey.count({ where: { workspaceId: admin.workspaceId } })).toBe(1)
  })

  it("when another workspace is named or the lookup key is taken, then 404 and 409 arrive as the SDK's generic API error", async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const other = await mintKey(deps, { isManagementKey: true })
    const sdk = openRouter(admin.key).apiKeys
    const elsewhere = await apiError(
      sdk.create({ requestBody: { name: 'n', workspaceId: other.workspaceId } }),
      404,
    )
    expect(elsewhere).toBeInstanceOf(OpenRouterDefaultError)
    const lookup = lookupKey()
    await sdk.create({ requestBody: { name: 'first', external: { user: 'u1', apiKey: lookup } } })
    const taken = await apiError(
      openRouter(other.key).apiKeys.create({
        requestBody: { name: 'second', external: { user: 'u2', apiKey: lookup } },
      }),
      409,
    )
    expect(taken).toBeInstanceOf(OpenRouterDefaultError)
    expect(JSON.parse(taken.body).error.message).toBe('external.api_key is already in use by another key')
  })
})

describe('OpenRouter SDK apiKeys.list()', () => {
  it('when a workspace holds enabled and disabled keys, then offset, includeDisabled and workspaceId page and filter them', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const sdk = openRouter(admin.key).apiKeys
    const made: string[] = []
    for (const name of ['one', 'two', 'three', 'four']) {
      made.push((await sdk.create({ requestBody: { name, external: { user: `user-${name}` } } })).data.hash)
    }
    await sdk.update({ hash: made[1]!, requestBody: { disabled: true } })

    const enabled = await sdk.list()
    expect(enabled.data.map((k) => k.name).sort()).toEqual(['four', 'one', 'test key', 'three'])
    expect(enabled.data.at(-1)!.hash).toBe(admin.hash) // newest first: the admin key came first
    const all = await sdk.list({ includeDisabled: true })
    expect(all.data).toHaveLength(5)
    expect(all.data.find((k) => k.hash === made[1])).toMatchObject({
      disabled: true,
      externalUser: 'user-two',
    })
    const page = await sdk.list({ includeDisabled: true, offset: 2 })
    expect(page.data.map((k) => k.hash)).toEqual(all.data.slice(2).map((k) => k.hash))
    expect((await sdk.list({ offset: 10 })).data).toEqual([])
    const own = await sdk.list({ includeDisabled: true, workspaceId: admin.workspaceId })
    expect(own.data).toEqual(all.data)

    // Each item is what key-info sent, less only key-info's own extra fields.
    const wire = (await raw('/keys?include_disabled=true', admin.key)).data as Array<Record<string, unknown>>
    expect(all.data).toEqual(wire.map((k) => asSdkSees(k, KEY_INFO_ONLY)))
  })

  it('when another workspace is asked for, then 404 as the generic API error; a bad offset is BadRequestResponseError', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const other = await mintKey(deps, { isManagementKey: true })
    const sdk = openRouter(admin.key).apiKeys
    expect(await apiError(sdk.list({ workspaceId: other.workspaceId }), 404)).toBeInstanceOf(
      OpenRouterDefaultError,
    )
    expect(await apiError(sdk.list({ offset: -1 }), 400)).toBeInstanceOf(BadRequestResponseError)
    expect(await apiError(sdk.list({ workspaceId: 'default' }), 400)).toBeInstanceOf(BadRequestResponseError)
  })
})

describe('OpenRouter SDK apiKeys.get(), update(), delete()', () => {
  it('when a key is read, changed and deleted, then each answer parses and the changes hold', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const sdk = openRouter(admin.key).apiKeys
    const { data: made, key } = await sdk.create({
      requestBody: { name: 'before', limit: 1, external: { user: 'partner-user-9' } },
    })

    const got = await sdk.get({ hash: made.hash })
    expect(got.data).toEqual(made)
    const wire = (await raw(`/keys/${made.hash}`, admin.key)).data as Record<string, unknown>
    expect(got.data).toEqual(asSdkSees(wire, KEY_INFO_ONLY))

    const updated = await sdk.update({
      hash: made.hash,
      requestBody: {
        name: 'after',
        disabled: true,
        limit: 7.5,
        limitReset: 'daily',
        includeByokInLimit: true,
      },
    })
    expect(updated.data).toMatchObject({
      hash: made.hash,
      name: 'after',
      disabled: true,
      limit: 7.5,
      limitRemaining: 7.5,
      limitReset: 'daily',
      includeByokInLimit: true,
      externalUser: 'partner-user-9',
      updatedAt: NOW,
    })
    expect((await sdk.get({ hash: made.hash })).data).toEqual(updated.data)
    // A disabled key stops working at once (no cached record answers for it).
    expect((await apiError(openRouter(key).apiKeys.getCurrentKeyMetadata(), 401)).message).toBe(
      'API key disabled',
    )

    const cleared = await sdk.update({
      hash: made.hash,
      requestBody: { disabled: false, limit: null, limitReset: null },
    })
    expect(cleared.data).toMatchObject({
      disabled: false,
      limit: null,
      limitRemaining: null,
      limitReset: null,
    })
    expect((await openRouter(key).apiKeys.getCurrentKeyMetadata()).data.limit).toBeNull()

    expect(await sdk.delete({ hash: made.hash })).toEqual({ deleted: true })
    await apiError(openRouter(key).apiKeys.getCurrentKeyMetadata(), 401)
  })

  it("when the hash is unknown or another workspace's, then NotFoundResponseError from get, update and delete", async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const theirs = await mintKey(deps)
    const sdk = openRouter(admin.key).apiKeys
    for (const hash of [randomBytes(32).toString('hex'), theirs.hash]) {
      for (const call of [
        sdk.get({ hash }),
        sdk.update({ hash, requestBody: { name: 'x' } }),
        sdk.delete({ hash }),
      ]) {
        const err = await apiError(call, 404)
        expect(err).toBeInstanceOf(NotFoundResponseError)
        expect(err.message).toBe(`no key with hash ${hash}`)
      }
    }
    expect((await deps.db.apiKey.findUniqueOrThrow({ where: { hash: theirs.hash } })).name).toBe('test key')
  })

  it('when the input is refused, then update is BadRequestResponseError, and a malformed hash is 400 as the generic error', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const target = await mintKey(deps, { workspaceId: admin.workspaceId })
    const sdk = openRouter(admin.key).apiKeys
    expect(await apiError(sdk.update({ hash: target.hash, requestBody: {} }), 400)).toBeInstanceOf(
      BadRequestResponseError,
    )
    expect(
      await apiError(sdk.update({ hash: target.hash, requestBody: { limit: 0.0000001 } }), 400),
    ).toBeInstanceOf(BadRequestResponseError)
    expect(await apiError(sdk.get({ hash: 'not-a-hash' }), 400)).toBeInstanceOf(OpenRouterDefaultError)
    expect(await apiError(sdk.delete({ hash: 'not-a-hash' }), 400)).toBeInstanceOf(OpenRouterDefaultError)
  })
})

/** Each call of the apiKeys group, made with `key` against `url`; the hash it names is `hash`. */
function everyCall(
  key: string | undefined,
  hash: string,
  options: { url?: string; noRetries?: boolean } = {},
) {
  const sdk = openRouter(key, options).apiKeys
  return [
    ['getCurrentKeyMetadata', () => sdk.getCurrentKeyMetadata()],
    ['list', () => sdk.list({ includeDisabled: true })],
    ['create', () => sdk.create({ requestBody: { name: 'n' } })],
    ['get', () => sdk.get({ hash })],
    ['update', () => sdk.update({ hash, requestBody: { name: 'm' } })],
    ['delete', () => sdk.delete({ hash })],
  ] as const
}

/** Which SDK error class each call declares for a status; any other status is OpenRouterDefaultError. */
const DECLARED: Record<string, Record<number, new (...args: never[]) => OpenRouterError>> = {
  getCurrentKeyMetadata: { 401: UnauthorizedResponseError, 500: InternalServerResponseError },
  list: {
    400: BadRequestResponseError,
    401: UnauthorizedResponseError,
    429: TooManyRequestsResponseError,
    500: InternalServerResponseError,
  },
  create: {
    400: BadRequestResponseError,
    401: UnauthorizedResponseError,
    403: ForbiddenResponseError,
    429: TooManyRequestsResponseError,
    500: InternalServerResponseError,
  },
  get: {
    401: UnauthorizedResponseError,
    404: NotFoundResponseError,
    429: TooManyRequestsResponseError,
    500: InternalServerResponseError,
  },
  update: {
    400: BadRequestResponseError,
    401: UnauthorizedResponseError,
    404: NotFoundResponseError,
    429: TooManyRequestsResponseError,
    500: InternalServerResponseError,
  },
  delete: {
    401: UnauthorizedResponseError,
    404: NotFoundResponseError,
    429: TooManyRequestsResponseError,
    500: InternalServerResponseError,
  },
}

function expectClass(name: string, status: number, err: OpenRouterError) {
  expect([name, err.constructor.name]).toEqual([
    name,
    (DECLARED[name]![status] ?? OpenRouterDefaultError).name,
  ])
}

/** An app of its own on a real port, for the error statuses that need another configuration or database. */
async function withServer<T>(
  options: { config?: Partial<AppConfig>; db?: ReturnType<typeof createDb> },
  run: (url: string) => Promise<T>,
): Promise<T> {
  const app = options.db
    ? createApp({
        config: { ...testConfig, ...options.config },
        logger: silentLogger(),
        db: options.db,
        kv: deps.kv,
      })
    : buildApp(deps, { clock: fixedClock(NOW), config: options.config })
  const own = await startTestServer(app)
  try {
    return await run(own.url)
  } finally {
    await own.close()
    await options.db?.$disconnect()
  }
}

describe('every error status parses as the SDK error it declares, or its generic API error', () => {
  it('when no key is sent, then 401 on every call', async () => {
    for (const [name, call] of everyCall(undefined, 'a'.repeat(64)))
      expectClass(name, 401, await apiError(call(), 401))
  })

  it('when a normal key calls, then 403 on every management call', async () => {
    const normal = await mintKey(deps)
    for (const [name, call] of everyCall(normal.key, normal.hash).slice(1))
      expectClass(name, 403, await apiError(call(), 403))
  })

  it('when a key goes over its rate, then 429 with Retry-After on every call', async () => {
    await withServer({ config: { KEY_RATE_LIMIT_PER_MINUTE: 1 } }, async (url) => {
      const admin = await mintKey(deps, { isManagementKey: true })
      for (const [name] of everyCall(undefined, admin.hash)) {
        // A fresh key per call: each has its own per-minute window.
        const key = await mintKey(deps, { workspaceId: admin.workspaceId, isManagementKey: true })
        const call = everyCall(key.key, key.hash, { url }).find(([n]) => n === name)![1]
        // The second request in a minute is refused; a window that turns over between the two
        // only postpones the refusal by one request.
        let refused: OpenRouterError | undefined
        for (let attempt = 0; attempt < 5 && !refused; attempt++) {
          refused = await call().then(
            () => undefined,
            (e: unknown) => (e instanceof OpenRouterError && e.statusCode === 429 ? e : undefined),
          )
        }
        expect([name, refused?.statusCode]).toEqual([name, 429])
        await apiError(Promise.reject(refused), 429)
        expectClass(name, 429, refused!)
        expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThan(0)
      }
    })
  })

  it('when a body is over BODY_LIMIT, then 413 as the generic API error', async () => {
    await withServer({ config: { BODY_LIMIT: '1kb' } }, async (url) => {
      const admin = await mintKey(deps, { isManagementKey: true })
      const sdk = openRouter(admin.key, { url }).apiKeys
      const huge = 'n'.repeat(4000)
      expectClass('create', 413, await apiError(sdk.create({ requestBody: { name: huge } }), 413))
      expectClass(
        'update',
        413,
        await apiError(sdk.update({ hash: admin.hash, requestBody: { name: huge } }), 413),
      )
    })
  })

  it('when the database fails, then 500 InternalServerResponseError on every call, with nothing internal in it', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    // A real failure: the same server, but a schema that has no tables.
    const broken = createDb({ url: deps.database.url, schema: `${deps.database.schema}_gone`, poolSize: 1 })
    await withServer({ db: broken }, async (url) => {
      for (const [name, call] of everyCall(admin.key, admin.hash, { url, noRetries: true })) {
        const err = await apiError(call(), 500)
        expectClass(name, 500, err)
        expect(err.message).toBe('Internal Server Error')
        expect(err.body).not.toMatch(/relation|api_key|_gone|does not exist/)
      }
    })
  })

  it('when the database cannot be reached, then 503 with Retry-After as the generic API error on every call', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const unreachable = createDb({
      url: 'postgresql://postgres@127.0.0.1:1/postgres',
      schema: deps.database.schema,
      poolSize: 1,
    })
    await withServer({ db: unreachable }, async (url) => {
      for (const [name, call] of everyCall(admin.key, admin.hash, { url, noRetries: true })) {
        const err = await apiError(call(), 503)
        expectClass(name, 503, err)
        expect(err.headers.get('retry-after')).toBe('5')
      }
    })
  })
})
