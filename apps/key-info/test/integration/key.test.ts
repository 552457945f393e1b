import { fixedClock } from '@quartet/core/clock'
import { hashToken } from '@quartet/core/auth'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'
import { type TKeyRecord, ZKeyResponse } from '../../src/http/key.ts'
import type { KeyRecord } from '../../src/domain/keys.ts'
import { createApp } from '../../src/app.ts'
import { request, silentLogger } from '@quartet/core/testing'
import { hotReadAnswers } from '@quartet/core/testing/operations'
import { keyInfoOperations } from '../../src/http/operations.ts'
import { testConfig } from '../helpers.ts'
import { createDb } from '../../src/store/db.ts'

const deps = useKeyInfoDeps()

// Compile-time: the wire schema (zod) and the domain's record are the same type, field for field.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
const wireMatchesDomain: Equal<TKeyRecord, KeyRecord> = true

/** Seed part B's table, field by field: the JSON type each field must have. */
const SEED_FIELDS: Record<string, (v: unknown) => boolean> = {
  allowed_data_regions: (v) =>
    Array.isArray(v) && v.every((r) => typeof r === 'string' && ['global', 'europe', 'us'].includes(r)),
  byok_usage: isNumber,
  byok_usage_daily: isNumber,
  byok_usage_weekly: isNumber,
  byok_usage_monthly: isNumber,
  creator_user_id: (v) => typeof v === 'string',
  expires_at: (v) => typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(v),
  free_model_daily_requests: (v) => {
    const o = v as Record<string, unknown>
    return (
      typeof o === 'object' &&
      o !== null &&
      Number.isInteger(o.limit) &&
      Number.isInteger(o.remaining) &&
      Number.isInteger(o.used)
    )
  },
  include_byok_in_limit: isBoolean,
  is_free_tier: isBoolean,
  is_management_key: isBoolean,
  is_provisioning_key: isBoolean,
  label: (v) => typeof v === 'string',
  limit: isNumber,
  limit_remaining: isNumber,
  limit_reset: (v) => v === 'daily' || v === 'weekly' || v === 'monthly',
  organization_id: (v) => v === null || typeof v === 'string',
  rate_limit: (v) => {
    const o = v as Record<string, unknown>
    return (
      typeof o === 'object' &&
      o !== null &&
      typeof o.interval === 'string' &&
      Number.isInteger(o.requests) &&
      typeof o.note === 'string'
    )
  },
  usage: isNumber,
  usage_daily: isNumber,
  usage_weekly: isNumber,
  usage_monthly: isNumber,
  workspace_id: (v) => typeof v === 'string',
}

function isNumber(v: unknown): boolean {
  return typeof v === 'number' && Number.isFinite(v)
}
function isBoolean(v: unknown): boolean {
  return typeof v === 'boolean'
}

describe('GET /api/v1/key', () => {
  it('when the Authorization header is missing, then 401 with exactly the seed body', async () => {
    const res = await request(buildApp(deps)).get('/api/v1/key').expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'Missing Authentication header' } })
  })

  it('when the bearer token is empty, then it counts as a missing header', async () => {
    const res = await request(buildApp(deps)).get('/api/v1/key').set('Authorization', 'Bearer   ').expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'Missing Authentication header' } })
  })

  it('when the key is unknown, then 401 Invalid API key', async () => {
    const res = await request(buildApp(deps))
      .get('/api/v1/key')
      .set(bearer('sk-qk-v1-' + 'ab'.repeat(32)))
      .expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'Invalid API key' } })
  })

  it('when the key is disabled, then 401 API key disabled', async () => {
    const { key, hash } = await mintKey(deps)
    await deps.db.apiKey.update({ where: { hash }, data: { disabled: true } })
    const res = await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'API key disabled' } })
  })

  it('when the key expired (at the very millisecond), then 401 API key expired; a millisecond before, 200', async () => {
    const expiresAt = new Date('2026-11-22T12:00:00.000Z')
    const { key } = await mintKey(deps, { expiresAt, clock: fixedClock('2026-11-01T00:00:00Z') })
    const clock = fixedClock('2026-11-22T11:59:59.999Z')
    await request(buildApp(deps, { clock })).get('/api/v1/key').set(bearer(key)).expect(200)
    clock.set(expiresAt)
    const res = await request(buildApp(deps, { clock })).get('/api/v1/key').set(bearer(key)).expect(401)
    expect(res.body).toEqual({ error: { code: 401, message: 'API key expired' } })
  })

  it('when the database fails, then 500 Internal Server Error and nothing internal leaks', async () => {
    const { key } = await mintKey(deps)
    // A real failure: the same server, but a schema that has no tables.
    const broken = createDb({ url: deps.database.url, schema: `${deps.database.schema}_gone`, poolSize: 1 })
    const app = createApp({ config: testConfig, logger: silentLogger(), db: broken, kv: deps.kv })
    try {
      const res = await request(app).get('/api/v1/key').set(bearer(key)).expect(500)
      expect(res.body).toEqual({ error: { code: 500, message: 'Internal Server Error' } })
      expect(res.text).not.toMatch(/relation|api_key|_gone|does not exist/)
    } finally {
      await broken.$disconnect()
    }
  })

  it('when the key is valid, then every field of the seed table is present with its type, and nothing else', async () => {
    const { key, hash, workspaceId } = await mintKey(deps, {
      limitMicros: 25_000_000n,
      limitReset: 'monthly',
      expiresAt: new Date('2099-01-01T00:00:00Z'),
      allowedDataRegions: ['europe', 'us'],
    })
    const res = await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(Object.keys(res.body)).toEqual(['data'])
    const data = res.body.data as Record<string, unknown>
    expect(Object.keys(data).sort()).toEqual(Object.keys(SEED_FIELDS).sort())
    for (const [field, hasType] of Object.entries(SEED_FIELDS)) {
      if (!hasType(data[field]))
        throw new Error(`${field} has the wrong type: ${JSON.stringify(data[field])}`)
    }
    expect(ZKeyResponse.parse(res.body)).toEqual(res.body)
    expect(wireMatchesDomain).toBe(true)
    expect(data).toMatchObject({
      limit: 25,
      limit_remaining: 25,
      limit_reset: 'monthly',
      usage: 0,
      byok_usage: 0,
      allowed_data_regions: ['europe', 'us'],
      is_management_key: false,
      is_provisioning_key: false,
      is_free_tier: false,
      organization_id: null,
      creator_user_id: 'test-user',
      workspace_id: workspaceId,
      expires_at: '2099-01-01T00:00:00.000Z',
      free_model_daily_requests: { limit: 1000, used: 0, remaining: 1000 },
    })
    expect((data.rate_limit as { note: string }).note).toMatch(/deprecated/i)
    expect(hashToken(key)).toBe(hash)
  })

  it('when the record is shown, then the label masks the key and the full key appears nowhere', async () => {
    const { key } = await mintKey(deps)
    const res = await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)
    const label = res.body.data.label as string
    expect(label).toMatch(/^sk-qk-v1-[0-9a-f]{3}\.\.\.[0-9a-f]{3}$/)
    expect(label.startsWith(key.slice(0, 12))).toBe(true)
    expect(label.endsWith(key.slice(-3))).toBe(true)
    expect(res.text).not.toContain(key)
    expect(res.text).not.toContain(key.slice(9, 30))
  })

  it('when a key is unlimited and never expires, then limit, limit_remaining, limit_reset and expires_at are null', async () => {
    const { key } = await mintKey(deps)
    const res = await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)
    expect(res.body.data).toMatchObject({
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      expires_at: null,
    })
  })

  it('when a management key asks, then is_provisioning_key mirrors is_management_key', async () => {
    const { key } = await mintKey(deps, { isManagementKey: true })
    const res = await request(buildApp(deps)).get('/api/v1/key').set(bearer(key)).expect(200)
    expect(res.body.data).toMatchObject({ is_management_key: true, is_provisioning_key: true })
  })

  it('when free-tier and per-key free-model limits apply, then the limit follows key, then tier, then config', async () => {
    const app = buildApp(deps, {
      config: { FREE_MODEL_DAILY_LIMIT: 777, FREE_TIER_FREE_MODEL_DAILY_LIMIT: 33 },
    })
    const free = await mintKey(deps, { isFreeTier: true })
    const paid = await mintKey(deps)
    const own = await mintKey(deps, { isFreeTier: true, freeModelDailyLimit: 5 })
    const limitOf = async (key: string) =>
      (await request(app).get('/api/v1/key').set(bearer(key)).expect(200)).body.data.free_model_daily_requests
    expect(await limitOf(free.key)).toEqual({ limit: 33, used: 0, remaining: 33 })
    expect(await limitOf(paid.key)).toEqual({ limit: 777, used: 0, remaining: 777 })
    expect(await limitOf(own.key)).toEqual({ limit: 5, used: 0, remaining: 5 })
  })

  it('when a key exceeds its per-minute rate, then 429 in the envelope with Retry-After', async () => {
    const app = buildApp(deps, { config: { KEY_RATE_LIMIT_PER_MINUTE: 2 } })
    const { key } = await mintKey(deps)
    const other = await mintKey(deps)
    const first = await request(app).get('/api/v1/key').set(bearer(key)).expect(200)
    expect(first.headers['ratelimit-limit']).toBe('2')
    await request(app).get('/api/v1/key').set(bearer(key)).expect(200)
    const res = await request(app).get('/api/v1/key').set(bearer(key)).expect(429)
    expect(res.body).toEqual({ error: { code: 429, message: 'Rate limit exceeded' } })
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60)
    // The limit is per key: another key is untouched.
    await request(app).get('/api/v1/key').set(bearer(other.key)).expect(200)
  })

  // GET of exactly /api/v1/key is served before express (core's hot route); HEAD, a query string
  // or a trailing slash reach the same handler through express. Both must answer alike.
  it.each([
    ['a valid key', (key: string) => bearer(key), 200],
    ['an unknown key', () => bearer('sk-qk-v1-' + 'cd'.repeat(32)), 401],
    ['no Authorization header', () => ({}), 401],
    ['a key over its rate', (key: string) => bearer(key), 429],
  ])(
    'when asked with %s, then the hot path and express give the same status, headers and body',
    async (_what, headers, status) => {
      const app = buildApp(deps, { config: { KEY_RATE_LIMIT_PER_MINUTE: status === 429 ? 2 : 600 } })
      const { key } = await mintKey(deps)
      if (status === 429) {
        await request(app).get('/api/v1/key').set(bearer(key)).expect(200)
        await request(app).get('/api/v1/key/').set(bearer(key)).expect(200)
      }
      const hot = await request(app).get('/api/v1/key').set(headers(key)).expect(status)
      const viaExpress = await request(app).get('/api/v1/key/').set(headers(key)).expect(status)

      expect(hot.text).toBe(viaExpress.text)
      const comparable = (h: Record<string, string>) => {
        const { date: _d, 'x-request-id': _id, 'ratelimit-remaining': _r, 'ratelimit-reset': _s, ...rest } = h
        return rest
      }
      expect(comparable(hot.headers)).toEqual(comparable(viaExpress.headers))
      expect(hot.headers['cache-control']).toBe('no-store')
    },
  )

  it('when every hot read is asked before express and of express alone (core hotReadAnswers), then the answers agree', async () => {
    const app = buildApp(deps, { config: { KEY_RATE_LIMIT_PER_MINUTE: 2 } })
    const { key } = await mintKey(deps)
    const examples = [
      { operation: 'getCurrentKey', path: '/api/v1/key', headers: bearer(key) },
      { operation: 'getCurrentKey', path: '/api/v1/key', headers: bearer('sk-qk-v1-' + 'e7'.repeat(32)) },
      // Each example is asked twice (each way): past the key's two a minute, 429 on each way.
      { operation: 'getCurrentKey', path: '/api/v1/key', headers: bearer(key) },
    ]
    const { hot, express } = await hotReadAnswers(app, keyInfoOperations, examples)
    expect(hot.map((answer) => answer.status)).toEqual([200, 401, 429])
    // Retry-After counts down the same window's seconds: equal unless a second turned between.
    const settled = (answers: typeof hot) =>
      answers.map(({ headers: { 'retry-after': _wait, ...headers }, ...rest }) => ({ ...rest, headers }))
    expect(settled(hot)).toEqual(settled(express))
  })

  it('when asked with HEAD, then express answers with the headers of a GET and no body', async () => {
    const app = buildApp(deps)
    const { key } = await mintKey(deps)

    const res = await request(app).head('/api/v1/key').set(bearer(key)).expect(200)

    expect(res.text).toBeUndefined()
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(res.headers['cache-control']).toBe('no-store')
  })

  it('when the scheme is not Bearer, then 401 in the envelope', async () => {
    const res = await request(buildApp(deps)).get('/api/v1/key').set('Authorization', 'Basic abc').expect(401)
    expect(res.body.error.code).toBe(401)
  })
})

describe('GET /openapi.json', () => {
  it('when fetched, then it is OpenAPI 3.1 describing every key-info route', async () => {
    const res = await request(buildApp(deps)).get('/openapi.json').expect(200)
    expect(res.body.openapi).toBe('3.1.0')
    expect(Object.keys(res.body.paths).sort()).toEqual([
      '/api/v1/key',
      '/api/v1/keys',
      '/api/v1/keys/{hash}',
      '/api/v1/usage',
    ])
    const event = res.body.paths['/api/v1/usage'].post.requestBody.content['application/json'].schema
    expect(event.properties.events.maxItems).toBe(1000)
    expect(res.body.paths['/api/v1/key'].get.responses['200']).toBeDefined()
  })
})
