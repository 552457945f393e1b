import { fixedClock } from '@quartet/core/clock'
import { request, startTestServer } from '@quartet/core/testing'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

async function workspace() {
  const admin = await mintKey(deps, { isManagementKey: true })
  const a = await mintKey(deps, { workspaceId: admin.workspaceId })
  const b = await mintKey(deps, { workspaceId: admin.workspaceId })
  return { admin, a, b }
}

const eventCount = async (workspaceId: string) => deps.db.usageEvent.count({ where: { workspaceId } })
const totals = async (hash: string) => {
  const k = await deps.db.apiKey.findUniqueOrThrow({ where: { hash } })
  return { usage: k.usageMicros, byok: k.byokUsageMicros }
}

describe('POST /api/v1/usage', () => {
  it('when a batch is recorded, then each event gets a result in order and the key record shows the spend', async () => {
    const { admin, a, b } = await workspace()
    const app = buildApp(deps)
    const res = await request(app)
      .post('/api/v1/usage')
      .set(bearer(admin.key))
      .send({
        events: [
          { id: 'e1', key_hash: a.hash, amount: 1.5 },
          { id: 'e2', key_hash: b.hash, amount: 0.25, byok: true },
          { id: 'e3', key_hash: 'f'.repeat(64), amount: 1 },
          { id: 'e1', key_hash: a.hash, amount: 1.5 },
        ],
      })
      .expect(200)
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.body).toEqual({
      data: {
        accepted: 2,
        duplicates: 1,
        rejected: 1,
        results: [
          { id: 'e1', status: 'accepted' },
          { id: 'e2', status: 'accepted' },
          { id: 'e3', status: 'rejected', reason: 'unknown_key', message: expect.any(String) },
          { id: 'e1', status: 'duplicate' },
        ],
      },
    })
    expect(await totals(a.hash)).toEqual({ usage: 1_500_000n, byok: 0n })
    expect(await totals(b.hash)).toEqual({ usage: 0n, byok: 250_000n })
    const rec = (await request(app).get('/api/v1/key').set(bearer(b.key)).expect(200)).body.data
    expect(rec).toMatchObject({ usage: 0, byok_usage: 0.25, byok_usage_daily: 0.25 })
  })

  it('when the raw events are gone, then GET /api/v1/key still reports the same: it reads rollups, never events', async () => {
    const { admin, a } = await workspace()
    const app = buildApp(deps)
    await request(app)
      .post('/api/v1/usage')
      .set(bearer(admin.key))
      .send({
        events: [
          { id: 'r1', key_hash: a.hash, amount: 2.5 },
          { id: 'r2', key_hash: a.hash, amount: 1, byok: true },
        ],
      })
      .expect(200)
    const before = (await request(app).get('/api/v1/key').set(bearer(a.key)).expect(200)).body.data
    await deps.database.query('DELETE FROM usage_event WHERE key_hash = $1', [a.hash])
    const after = (await request(app).get('/api/v1/key').set(bearer(a.key)).expect(200)).body.data
    expect(after).toEqual(before)
    expect(after).toMatchObject({ usage: 2.5, usage_daily: 2.5, byok_usage: 1, byok_usage_monthly: 1 })
  })

  it('when an event id is sent again later, then it is a duplicate and counted once', async () => {
    const { admin, a } = await workspace()
    const app = buildApp(deps)
    const batch = {
      events: [{ id: 'again', key_hash: a.hash, amount: 3, occurred_at: '2026-01-01T00:00:00Z' }],
    }
    await request(app).post('/api/v1/usage').set(bearer(admin.key)).send(batch).expect(200)
    const res = await request(app).post('/api/v1/usage').set(bearer(admin.key)).send(batch).expect(200)
    expect(res.body.data.results).toEqual([{ id: 'again', status: 'duplicate' }])
    expect(await totals(a.hash)).toEqual({ usage: 3_000_000n, byok: 0n })
  })

  it('when an id is reused with different content, then it is rejected as id_conflict and nothing changes', async () => {
    const { admin, a } = await workspace()
    const app = buildApp(deps)
    await request(app)
      .post('/api/v1/usage')
      .set(bearer(admin.key))
      .send({ events: [{ id: 'x', key_hash: a.hash, amount: 1 }] })
      .expect(200)
    const res = await request(app)
      .post('/api/v1/usage')
      .set(bearer(admin.key))
      .send({ events: [{ id: 'x', key_hash: a.hash, amount: 2 }] })
      .expect(200)
    expect(res.body.data.results[0]).toMatchObject({ id: 'x', status: 'rejected', reason: 'id_conflict' })
    expect(await totals(a.hash)).toEqual({ usage: 1_000_000n, byok: 0n })
  })

  it('when the same batch arrives 10 times in parallel, then every event is counted exactly once', async () => {
    const { admin, a, b } = await workspace()
    const server = await startTestServer(buildApp(deps))
    try {
      const events = Array.from({ length: 60 }, (_, i) => ({
        id: `par-${i}`,
        key_hash: i % 2 ? a.hash : b.hash,
        amount: 0.1,
        byok: i % 3 === 0,
        free_model: i % 4 === 0,
      }))
      const responses = await Promise.all(
        Array.from({ length: 10 }, () =>
          request(server.url).post('/api/v1/usage').set(bearer(admin.key)).send({ events }),
        ),
      )
      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200))
      const accepted = responses.reduce((n, r) => n + r.body.data.accepted, 0)
      const duplicates = responses.reduce((n, r) => n + r.body.data.duplicates, 0)
      expect(accepted).toBe(60)
      expect(duplicates).toBe(540)
      expect(await eventCount(admin.workspaceId)).toBe(60)
      const sum = async (hash: string) => {
        const t = await totals(hash)
        return t.usage + t.byok
      }
      expect(await sum(a.hash)).toBe(3_000_000n)
      expect(await sum(b.hash)).toBe(3_000_000n)
      const rollups = await deps.db.apiKeyDailyUsage.findMany({
        where: { keyHash: { in: [a.hash, b.hash] } },
      })
      expect(rollups.reduce((n, r) => n + r.usageMicros + r.byokUsageMicros, 0n)).toBe(6_000_000n)
      expect(rollups.reduce((n, r) => n + r.freeModelRequests, 0)).toBe(15)
    } finally {
      await server.close()
    }
  })

  it('when a key of another workspace is named, then that event is rejected as unknown_key and not counted', async () => {
    const mine = await workspace()
    const theirs = await workspace()
    const res = await request(buildApp(deps))
      .post('/api/v1/usage')
      .set(bearer(mine.admin.key))
      .send({ events: [{ id: 'steal', key_hash: theirs.a.hash, amount: 5 }] })
      .expect(200)
    expect(res.body.data.results[0]).toMatchObject({ status: 'rejected', reason: 'unknown_key' })
    expect(await totals(theirs.a.hash)).toEqual({ usage: 0n, byok: 0n })
    expect(await eventCount(theirs.admin.workspaceId)).toBe(0)
  })

  it('when occurred_at lies more than 5 minutes ahead, then that event is rejected', async () => {
    const { admin, a } = await workspace()
    const res = await request(buildApp(deps, { clock: fixedClock('2026-11-22T10:00:00Z') }))
      .post('/api/v1/usage')
      .set(bearer(admin.key))
      .send({
        events: [
          { id: 'soon', key_hash: a.hash, amount: 1, occurred_at: '2026-11-22T10:04:59Z' },
          { id: 'later', key_hash: a.hash, amount: 1, occurred_at: '2026-11-22T10:05:01Z' },
        ],
      })
      .expect(200)
    expect(res.body.data.results.map((r: { status: string }) => r.status)).toEqual(['accepted', 'rejected'])
    expect(res.body.data.results[1].reason).toBe('occurred_at_in_future')
  })

  it('when a normal key posts usage, then 403 with the seed message and nothing is written', async () => {
    const { admin, a } = await workspace()
    const res = await request(buildApp(deps))
      .post('/api/v1/usage')
      .set(bearer(a.key))
      .send({ events: [{ id: 'n', key_hash: a.hash, amount: 1 }] })
      .expect(403)
    expect(res.body).toEqual({
      error: { code: 403, message: 'Only management keys can perform this operation' },
    })
    expect(await eventCount(admin.workspaceId)).toBe(0)
  })

  describe('bad input is 400 in the envelope and writes nothing', () => {
    const valid = (hash: string) => ({ id: 'ok-1', key_hash: hash, amount: 1 })
    const cases: Array<[string, (hash: string) => unknown]> = [
      ['a negative amount', (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: -0.01 }] })],
      ['a numeric string amount', (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: '1' }] })],
      ['"NaN" as amount', (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: 'NaN' }] })],
      ['"Infinity" as amount', (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: 'Infinity' }] })],
      [
        'an amount finer than 1 µUSD',
        (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: 0.0000001 }] }),
      ],
      [
        'a boolean of the wrong type',
        (h) => ({ events: [valid(h), { id: 'b', key_hash: h, amount: 1, byok: 'yes' }] }),
      ],
      ['a numeric id', (h) => ({ events: [valid(h), { id: 7, key_hash: h, amount: 1 }] })],
      ['a malformed key hash', () => ({ events: [{ id: 'b', key_hash: 'not-a-hash', amount: 1 }] })],
      ['an unknown field in an event', (h) => ({ events: [{ ...valid(h), cost: 1 }] })],
      ['an unknown top-level field', (h) => ({ events: [valid(h)], extra: true })],
      [
        'a non-UTC occurred_at',
        (h) => ({ events: [{ ...valid(h), occurred_at: '2026-11-22T10:00:00+02:00' }] }),
      ],
      [
        'an occurred_at in the year 0000, which Postgres has not',
        (h) => ({ events: [valid(h), { ...valid(h), id: 'b', occurred_at: '0000-06-01T00:00:00Z' }] }),
      ],
      ['an empty batch', () => ({ events: [] })],
      ['events that is not an array', (h) => ({ events: valid(h) })],
      [
        'a batch of 1001 events',
        (h) => ({
          events: Array.from({ length: 1001 }, (_, i) => ({ id: `big-${i}`, key_hash: h, amount: 0.01 })),
        }),
      ],
    ]
    it.each(cases)('when the body has %s, then 400', async (_name, body) => {
      const { admin, a } = await workspace()
      const res = await request(buildApp(deps))
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send(body(a.hash) as object)
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ error: { code: 400, message: expect.any(String) } })
      expect(await eventCount(admin.workspaceId)).toBe(0)
      expect(await totals(a.hash)).toEqual({ usage: 0n, byok: 0n })
    })

    it('when the JSON is malformed, then 400 and nothing is written', async () => {
      const { admin, a } = await workspace()
      const res = await request(buildApp(deps))
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .set('Content-Type', 'application/json')
        .send(`{"events":[{"id":"m","key_hash":"${a.hash}","amount":1}`)
        .expect(400)
      expect(res.body).toEqual({ error: { code: 400, message: 'request body is not valid JSON' } })
      expect(await eventCount(admin.workspaceId)).toBe(0)
    })

    it('when an amount is a string, then the message names the type expected and the type received', async () => {
      const { admin, a } = await workspace()
      const res = await request(buildApp(deps))
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send({ events: [{ id: 's', key_hash: a.hash, amount: '5' }] })
        .expect(400)
      expect(res.body.error.message).toBe('body.events.0.amount: expected number, received string')
    })

    it('when an amount is past 1 000 000 000 USD, then 400 naming that limit', async () => {
      const { admin, a } = await workspace()
      const res = await request(buildApp(deps))
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send({ events: [{ id: 'huge', key_hash: a.hash, amount: 1e300 }] })
        .expect(400)
      expect(res.body.error.message).toMatch(/^body\.events\.0\.amount: must be at most 1000000000\b/)
      expect(await eventCount(admin.workspaceId)).toBe(0)
    })

    it('when the body nests 10,000 deep, then 400 naming the nesting limit and nothing is written', async () => {
      const { admin } = await workspace()
      const res = await request(buildApp(deps))
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .set('Content-Type', 'application/json')
        .send('{"events":' + '['.repeat(10_000) + ']'.repeat(10_000) + '}')
        .expect(400)
      expect(res.body).toEqual({
        error: { code: 400, message: 'request body nests deeper than 64 levels of arrays and objects' },
      })
      expect(await eventCount(admin.workspaceId)).toBe(0)
    })
  })

  describe("a key's all-time total is bounded (1 000 000 000 000 USD, inside Postgres BIGINT µUSD)", () => {
    const LIMIT_MICROS = 1_000_000_000_000n * 1_000_000n
    const fill = (hash: string, prefix: string, last = 1e9) => ({
      events: Array.from({ length: 1000 }, (_, i) => ({
        id: `${prefix}-${i}`,
        key_hash: hash,
        amount: i === 999 ? last : 1e9,
      })),
    })

    it('when batches of 1000 × 1e9 USD reach the limit, then the next is 422 naming the limit, not a 500, and nothing of it is kept', async () => {
      const { admin, a } = await workspace()
      const app = buildApp(deps)
      await request(app).post('/api/v1/usage').set(bearer(admin.key)).send(fill(a.hash, 'f1')).expect(200)
      expect(await totals(a.hash)).toEqual({ usage: LIMIT_MICROS, byok: 0n })

      const res = await request(app)
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send({ events: [{ id: 'one-more', key_hash: a.hash, amount: 0.000001 }] })
      expect(res.status).toBe(422)
      expect(res.body).toEqual({
        error: { code: 422, message: expect.stringContaining('all-time limit of 1000000000000 USD') },
      })
      expect(res.body.error.message).toContain(a.hash)
      expect(await totals(a.hash)).toEqual({ usage: LIMIT_MICROS, byok: 0n })
      expect(await eventCount(admin.workspaceId)).toBe(1000)
      const rec = (await request(app).get('/api/v1/key').set(bearer(a.key)).expect(200)).body.data
      expect(rec.usage).toBe(1e12)
    })

    it('when one key of a batch would pass the limit, then the whole batch is refused: the other key gets nothing either', async () => {
      const { admin, a, b } = await workspace()
      const app = buildApp(deps)
      await request(app).post('/api/v1/usage').set(bearer(admin.key)).send(fill(b.hash, 'fb')).expect(200)

      await request(app)
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send({
          events: [
            { id: 'small', key_hash: a.hash, amount: 2 },
            { id: 'over', key_hash: b.hash, amount: 1, byok: false },
          ],
        })
        .expect(422)
      expect(await totals(a.hash)).toEqual({ usage: 0n, byok: 0n })
      expect(await totals(b.hash)).toEqual({ usage: LIMIT_MICROS, byok: 0n })
      expect(await eventCount(admin.workspaceId)).toBe(1000)
      // BYOK usage is its own total: a key at its usage limit still records BYOK spend.
      await request(app)
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send({ events: [{ id: 'byok', key_hash: b.hash, amount: 1, byok: true }] })
        .expect(200)
    })

    it('when parallel batches race for the last 3 USD below the limit, then exactly 3 are recorded and the total ends at the limit', async () => {
      const { admin, a } = await workspace()
      const app = buildApp(deps)
      await request(app)
        .post('/api/v1/usage')
        .set(bearer(admin.key))
        .send(fill(a.hash, 'f3', 1e9 - 3))
        .expect(200)

      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          request(app)
            .post('/api/v1/usage')
            .set(bearer(admin.key))
            .send({ events: [{ id: `race-${i}`, key_hash: a.hash, amount: 1 }] }),
        ),
      )
      const statuses = answers.map((r) => r.status).sort()
      expect(statuses).toEqual([200, 200, 200, 422, 422, 422, 422, 422])
      expect(await totals(a.hash)).toEqual({ usage: LIMIT_MICROS, byok: 0n })
      expect(await eventCount(admin.workspaceId)).toBe(1003)
    })
  })
})

describe('free-model daily counters', () => {
  const day = '2026-11-22'
  const clock = () => fixedClock(`${day}T15:00:00Z`)

  async function freeRequests(key: string) {
    const res = await request(buildApp(deps, { clock: clock() }))
      .get('/api/v1/key')
      .set(bearer(key))
      .expect(200)
    return res.body.data.free_model_daily_requests
  }

  async function send(admin: string, events: object[]) {
    return request(buildApp(deps, { clock: clock() }))
      .post('/api/v1/usage')
      .set(bearer(admin))
      .send({ events })
      .expect(200)
  }

  it('when free-model events are recorded, then used and remaining follow, and kv mirrors the day count', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const k = await mintKey(deps, { workspaceId: admin.workspaceId, isFreeTier: true })
    await send(admin.key, [
      { id: 'f1', key_hash: k.hash, amount: 0, free_model: true },
      { id: 'f2', key_hash: k.hash, amount: 0, free_model: true },
      { id: 'p1', key_hash: k.hash, amount: 0.5 },
    ])
    expect(await freeRequests(k.key)).toEqual({ limit: 50, used: 2, remaining: 48 })
    expect(await deps.kv.get(`free-model:${k.hash}:${day}`)).toBe('2')
  })

  it('when kv loses the counter, then the count is neither reset nor inflated, and goes on from Postgres', async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const k = await mintKey(deps, { workspaceId: admin.workspaceId, freeModelDailyLimit: 3 })
    const batch = [1, 2, 3, 4].map((i) => ({ id: `fm-${i}`, key_hash: k.hash, amount: 0, free_model: true }))
    await send(admin.key, batch)
    await deps.kv.del(`free-model:${k.hash}:${day}`)
    expect(await freeRequests(k.key)).toEqual({ limit: 3, used: 4, remaining: 0 })
    // A replay after the loss does not count again.
    await send(admin.key, batch)
    expect(await freeRequests(k.key)).toEqual({ limit: 3, used: 4, remaining: 0 })
    await send(admin.key, [{ id: 'fm-5', key_hash: k.hash, amount: 0, free_model: true }])
    expect(await freeRequests(k.key)).toEqual({ limit: 3, used: 5, remaining: 0 })
    expect(await deps.kv.get(`free-model:${k.hash}:${day}`)).toBe('5')
  })

  it("when yesterday's free-model events exist, then today's counter starts at zero", async () => {
    const admin = await mintKey(deps, { isManagementKey: true })
    const k = await mintKey(deps, { workspaceId: admin.workspaceId })
    await send(admin.key, [
      { id: 'y', key_hash: k.hash, amount: 0, free_model: true, occurred_at: '2026-11-21T23:59:59.999Z' },
    ])
    expect(await freeRequests(k.key)).toEqual({ limit: 1000, used: 0, remaining: 1000 })
  })
})
