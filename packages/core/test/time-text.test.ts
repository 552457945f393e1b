import pg from 'pg'
import { createPgPool } from '../src/db.ts'
import { testDatabaseUrl } from '../src/testing.ts'
import { isoString, parseTimestamptz } from '../src/time-text.ts'

const pgParse = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (t: string) => unknown
const same = (text: string) => {
  const ours = parseTimestamptz(text)
  const theirs = pgParse(text)
  return ours instanceof Date && theirs instanceof Date
    ? ours.getTime() === theirs.getTime() || (Number.isNaN(ours.getTime()) && Number.isNaN(theirs.getTime()))
    : Object.is(ours, theirs)
}

describe("parseTimestamptz gives pg's own result", () => {
  it('for every fraction of a second, one to six digits (the float truncation included)', () => {
    let differ = 0
    for (let f = 0; f < 1_000_000; f++)
      if (!same(`2026-11-24 14:23:44.${String(f).padStart(6, '0')}+00`)) differ++
    for (let f = 0; f < 1000; f++) if (!same(`2026-02-28 23:59:59.${String(f).padStart(3, '0')}-07`)) differ++
    for (let f = 0; f < 100; f++) if (!same(`1999-12-31 23:59:59.${f}+05:30`)) differ++
    expect(differ).toBe(0)
  })

  it('for every offset form, and across days, months, leap years and centuries', () => {
    const zones = ['+00', '-00', '+05:30', '-03:30', '+14', '-12', '-00:44:30', '+01:00:10']
    let differ = 0
    for (let t = Date.UTC(1000, 0, 1); t < Date.UTC(9999, 11, 31); t += 86_400_000 * 37 + 3_601_001) {
      const d = new Date(t)
      const base = d.toISOString().slice(0, 23).replace('T', ' ')
      for (const z of zones) if (!same(base + z)) differ++
    }
    expect(differ).toBe(0)
  })

  it('for what it hands on: infinity, BC, short years, another DateStyle, garbage', () => {
    for (const text of [
      'infinity',
      '-infinity',
      '2026-11-24 14:23:44+00 BC',
      '0099-01-01 00:00:00+00',
      '0999-06-01 12:00:00.5+00',
      '12026-11-24 14:23:44+00',
      '11/24/2026 14:23:44 UTC',
      'Tue Nov 24 14:23:44 2026 UTC',
      '2026-11-24 14:23:44',
      '2026-11-24 14:23:44.+00',
      '2026-11-24 14:23:44+0',
      '2026-11-24 14:23:44+00:3',
      '2026-11-24T14:23:44+00',
      '2026-1a-24 14:23:44+00',
      '',
      'nonsense that is long enough',
    ])
      expect([text, same(text)]).toEqual([text, true])
  })

  it('for what Postgres itself sends, in every session time zone (the pool parses with it)', async () => {
    const pool = createPgPool(testDatabaseUrl(), { max: 1 })
    const reference = new pg.Pool({ connectionString: testDatabaseUrl(), max: 1 })
    try {
      for (const zone of [
        'UTC',
        'Asia/Kolkata',
        'America/St_Johns',
        'Africa/Monrovia',
        'Pacific/Kiritimati',
      ]) {
        const sql = `SET TIME ZONE '${zone}'; SELECT t, t::text AS text FROM (VALUES
          ('1970-01-01 00:00:00+00'::timestamptz), ('1971-05-01 12:34:56.789123+00'), ('2000-02-29 23:59:59.999999+00'),
          ('2026-11-24 14:23:44.5+00'), ('2026-06-15 08:09:10.111213+00'), ('9999-12-31 23:59:59.999+00'), ('infinity'), ('1200-01-01 00:00:00+00')) v(t)`
        const ours = (await pool.query(sql)) as unknown as Array<{
          rows: Array<{ t: unknown; text: string }>
        }>
        const theirs = (await reference.query(sql)) as unknown as Array<{ rows: Array<{ t: unknown }> }>
        const rows = ours[1]!.rows
        expect(rows.length).toBe(8)
        rows.forEach((row, i) =>
          expect([zone, row.text, row.t]).toEqual([zone, row.text, theirs[1]!.rows[i]!.t]),
        )
      }
    } finally {
      await Promise.all([pool.end(), reference.end()])
    }
  })
})

describe('isoString gives toISOString', () => {
  it('across 1970 to 9999, on the edges of days, months, leap years and centuries', () => {
    let differ = 0
    const check = (t: number) => {
      const d = new Date(t)
      if (isoString(d) !== d.toISOString()) differ++
    }
    for (let t = 0; t < 253_402_300_800_000; t += 7_777_777_123) check(t)
    for (const y of [1970, 1999, 2000, 2024, 2026, 2100, 2400, 9999])
      for (const [m, d] of [
        [0, 1],
        [1, 28],
        [1, 29],
        [2, 1],
        [11, 31],
      ])
        for (const ms of [0, 1, 999, 59_999, 86_399_999]) check(Date.UTC(y, m!, d!) + ms)
    expect(differ).toBe(0)
  })

  it('hands on what it does not cover: before 1970, past 9999, and an invalid Date (which throws)', () => {
    for (const t of [-1, -86_400_001, Date.UTC(1200, 5, 6, 7, 8, 9, 10), 253_402_300_800_000, 8.64e15]) {
      const d = new Date(t)
      expect(isoString(d)).toBe(d.toISOString())
    }
    expect(() => isoString(new Date(NaN))).toThrow(RangeError)
  })
})
