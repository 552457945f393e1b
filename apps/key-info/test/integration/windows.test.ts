import { request } from '@quartet/core/testing'
import { fixedClock } from '@quartet/core/clock'
import type { LimitReset } from '../../src/domain/ports.ts'
import { bearer, buildApp, mintKey, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()

/** A workspace with a management key (to report usage) and a key under test. */
async function setup(options: Parameters<typeof mintKey>[1] = {}) {
  const admin = await mintKey(deps, { isManagementKey: true })
  const key = await mintKey(deps, { workspaceId: admin.workspaceId, ...options })
  return { admin, key }
}

async function report(
  clockAt: string,
  admin: { key: string },
  events: Array<{ key_hash: string; amount: number; byok?: boolean; occurred_at: string }>,
) {
  const app = buildApp(deps, { clock: fixedClock(clockAt) })
  const res = await request(app)
    .post('/api/v1/usage')
    .set(bearer(admin.key))
    .send({ events: events.map((e, i) => ({ id: `${clockAt}-${i}-${Math.random()}`, ...e })) })
    .expect(200)
  expect(res.body.data.accepted).toBe(events.length)
}

async function recordAt(clockAt: string, key: { key: string }) {
  const app = buildApp(deps, { clock: fixedClock(clockAt) })
  return (await request(app).get('/api/v1/key').set(bearer(key.key)).expect(200)).body.data
}

describe('usage windows (UTC day, week from Monday 00:00 UTC, calendar month)', () => {
  it('when the clock crosses Sunday 23:59:59.999 → Monday 00:00, then the day and week restart but not the month', async () => {
    const { admin, key } = await setup()
    const sundayLast = '2026-11-22T23:59:59.999Z'
    await report(sundayLast, admin, [{ key_hash: key.hash, amount: 1.25, occurred_at: sundayLast }])
    expect(await recordAt(sundayLast, key)).toMatchObject({
      usage: 1.25,
      usage_daily: 1.25,
      usage_weekly: 1.25,
      usage_monthly: 1.25,
    })
    const monday = '2026-11-23T00:00:00.000Z'
    expect(await recordAt(monday, key)).toMatchObject({
      usage: 1.25,
      usage_daily: 0,
      usage_weekly: 0,
      usage_monthly: 1.25,
    })
    await report(monday, admin, [{ key_hash: key.hash, amount: 2, occurred_at: monday }])
    expect(await recordAt(monday, key)).toMatchObject({
      usage: 3.25,
      usage_daily: 2,
      usage_weekly: 2,
      usage_monthly: 3.25,
    })
  })

  it('when the month ends on a Monday, then the month restarts while the week carries on', async () => {
    const { admin, key } = await setup()
    const lastOfNovember = '2026-11-30T23:59:59.999Z' // a Monday
    await report(lastOfNovember, admin, [
      { key_hash: key.hash, amount: 1, occurred_at: lastOfNovember },
      { key_hash: key.hash, amount: 0.5, byok: true, occurred_at: lastOfNovember },
    ])
    expect(await recordAt('2026-12-01T00:00:00.000Z', key)).toMatchObject({
      usage: 1,
      usage_daily: 0,
      usage_weekly: 1,
      usage_monthly: 0,
      byok_usage: 0.5,
      byok_usage_daily: 0,
      byok_usage_weekly: 0.5,
      byok_usage_monthly: 0,
    })
  })

  it('when the year ends on a Thursday, then day and month restart and the week reaches back into December', async () => {
    const { admin, key } = await setup()
    await report('2026-12-31T23:59:59.999Z', admin, [
      { key_hash: key.hash, amount: 4, occurred_at: '2026-12-28T00:00:00.000Z' }, // Monday of that week
      { key_hash: key.hash, amount: 2, occurred_at: '2026-12-27T23:59:59.999Z' }, // Sunday before: last week
      { key_hash: key.hash, amount: 1, occurred_at: '2026-12-31T23:59:59.999Z' },
    ])
    expect(await recordAt('2027-01-01T00:00:00.000Z', key)).toMatchObject({
      usage: 7,
      usage_daily: 0,
      usage_weekly: 5,
      usage_monthly: 0,
    })
    expect(await recordAt('2026-12-31T12:00:00.000Z', key)).toMatchObject({
      usage_daily: 1,
      usage_weekly: 5,
      usage_monthly: 7,
    })
  })

  it('when amounts like 0.1 and 0.2 are summed, then the total is exact: 0.300001, not a float sum', async () => {
    const { admin, key } = await setup()
    const at = '2026-11-18T12:00:00.000Z'
    await report(at, admin, [
      { key_hash: key.hash, amount: 0.1, occurred_at: at },
      { key_hash: key.hash, amount: 0.2, occurred_at: at },
      { key_hash: key.hash, amount: 0.000001, occurred_at: at },
    ])
    const data = await recordAt(at, key)
    expect(data.usage).toBe(0.300001)
    expect(data.usage_daily).toBe(0.300001)
  })
})

describe('limit_remaining by limit_reset', () => {
  // Wednesday 18 Nov 2026: today 18th; this week from Monday 16th; this month from 1st.
  const now = '2026-11-18T12:00:00.000Z'
  const history = (hash: string) => [
    { key_hash: hash, amount: 1, occurred_at: '2026-11-18T01:00:00.000Z' }, // today
    { key_hash: hash, amount: 0.5, byok: true, occurred_at: '2026-11-18T02:00:00.000Z' }, // today, BYOK
    { key_hash: hash, amount: 2, occurred_at: '2026-11-16T00:00:00.000Z' }, // this week
    { key_hash: hash, amount: 4, occurred_at: '2026-11-05T00:00:00.000Z' }, // this month
    { key_hash: hash, amount: 8, occurred_at: '2026-10-20T00:00:00.000Z' }, // last month
  ]
  const cases: Array<[LimitReset | null, boolean, number]> = [
    ['daily', false, 9],
    ['daily', true, 8.5],
    ['weekly', false, 7],
    ['weekly', true, 6.5],
    ['monthly', false, 3],
    ['monthly', true, 2.5],
    [null, false, 0], // never resets: 10 − 15 all-time, floored at 0
    [null, true, 0],
  ]
  it.each(cases)(
    'when limit_reset is %s and include_byok_in_limit is %s, then limit_remaining is %d',
    async (limitReset, includeByokInLimit, expected) => {
      const { admin, key } = await setup({ limitMicros: 10_000_000n, limitReset, includeByokInLimit })
      await report(now, admin, history(key.hash))
      const data = await recordAt(now, key)
      expect(data).toMatchObject({
        limit: 10,
        limit_reset: limitReset,
        include_byok_in_limit: includeByokInLimit,
      })
      expect(data.limit_remaining).toBe(expected)
      expect(data).toMatchObject({
        usage: 15,
        byok_usage: 0.5,
        usage_daily: 1,
        usage_weekly: 3,
        usage_monthly: 7,
      })
    },
  )

  it('when a never-resetting limit is not yet used up, then limit_remaining counts all-time spend', async () => {
    const { admin, key } = await setup({ limitMicros: 20_000_000n, includeByokInLimit: true })
    await report(now, admin, history(key.hash))
    expect((await recordAt(now, key)).limit_remaining).toBe(4.5)
  })
})

describe('limit_remaining at the boundary of each reset period (UTC day, ISO week from Monday, calendar month)', () => {
  type Spend = { amount: number; at: string; byok?: boolean }
  const cases: Array<{
    reset: LimitReset
    spends: Spend[]
    lastInstant: string
    firstInstant: string
    before: number
    after: number
  }> = [
    {
      // Tuesday → Wednesday: yesterday's spend stops counting; the week goes on, but the limit is daily.
      reset: 'daily',
      spends: [
        { amount: 1, at: '2026-11-17T00:00:00.000Z' },
        { amount: 2, at: '2026-11-17T23:59:59.999Z' },
        { amount: 4, at: '2026-11-16T12:00:00.000Z' },
      ],
      lastInstant: '2026-11-17T23:59:59.999Z',
      firstInstant: '2026-11-18T00:00:00.000Z',
      before: 7,
      after: 10,
    },
    {
      // Sunday → Monday: the whole week (Monday 16th 00:00 to Sunday 22nd 23:59:59.999) stops counting.
      reset: 'weekly',
      spends: [
        { amount: 1, at: '2026-11-16T00:00:00.000Z' },
        { amount: 2, at: '2026-11-22T23:59:59.999Z' },
        { amount: 4, at: '2026-11-15T23:59:59.999Z' }, // the Sunday before: last week already
      ],
      lastInstant: '2026-11-22T23:59:59.999Z',
      firstInstant: '2026-11-23T00:00:00.000Z',
      before: 7,
      after: 10,
    },
    {
      // 30 November (a Monday) → 1 December: the month stops counting though the week goes on.
      reset: 'monthly',
      spends: [
        { amount: 1, at: '2026-11-01T00:00:00.000Z' },
        { amount: 2, at: '2026-11-30T23:59:59.999Z' },
        { amount: 0.5, at: '2026-11-30T08:00:00.000Z', byok: true }, // counts: include_byok_in_limit
        { amount: 4, at: '2026-10-31T23:59:59.999Z' }, // October: last month already
      ],
      lastInstant: '2026-11-30T23:59:59.999Z',
      firstInstant: '2026-12-01T00:00:00.000Z',
      before: 6.5,
      after: 10,
    },
  ]

  it.each(cases)(
    'when a $reset limit crosses $firstInstant, then limit_remaining is $before at the last millisecond and $after at the first',
    async ({ reset, spends, lastInstant, firstInstant, before, after }) => {
      const { admin, key } = await setup({
        limitMicros: 10_000_000n,
        limitReset: reset,
        includeByokInLimit: true,
      })
      await report(
        lastInstant,
        admin,
        spends.map((s) => ({
          key_hash: key.hash,
          amount: s.amount,
          byok: s.byok ?? false,
          occurred_at: s.at,
        })),
      )
      expect((await recordAt(lastInstant, key)).limit_remaining).toBe(before)
      expect((await recordAt(firstInstant, key)).limit_remaining).toBe(after)
      // Spend at the very first instant of the new period counts in it, and the management view agrees.
      await report(firstInstant, admin, [{ key_hash: key.hash, amount: 3, occurred_at: firstInstant }])
      expect((await recordAt(firstInstant, key)).limit_remaining).toBe(after - 3)
      const managed = await request(buildApp(deps, { clock: fixedClock(firstInstant) }))
        .get(`/api/v1/keys/${key.hash}`)
        .set(bearer(admin.key))
        .expect(200)
      expect(managed.body.data.limit_remaining).toBe(after - 3)
    },
  )
})
