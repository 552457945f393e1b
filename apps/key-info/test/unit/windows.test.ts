import { msUntilEndOfDay, usageWindows } from '../../src/domain/windows.ts'

describe('usage windows', () => {
  it('when it is Sunday 23:59:59.999 UTC, then the week began the Monday before', () => {
    expect(usageWindows(new Date('2026-11-22T23:59:59.999Z'))).toEqual({
      today: '2026-11-22',
      weekStart: '2026-11-16',
      monthStart: '2026-11-01',
      from: '2026-11-01',
    })
  })

  it('when it is Monday 00:00 UTC, then a new week begins that very day', () => {
    expect(usageWindows(new Date('2026-11-23T00:00:00.000Z'))).toMatchObject({
      today: '2026-11-23',
      weekStart: '2026-11-23',
    })
  })

  it('when the week began in the previous month (and year), then the read reaches back to the week start', () => {
    expect(usageWindows(new Date('2027-01-01T00:00:00.000Z'))).toEqual({
      today: '2027-01-01',
      weekStart: '2026-12-28',
      monthStart: '2027-01-01',
      from: '2026-12-28',
    })
  })

  it('when a local offset would say another day, then UTC decides', () => {
    expect(usageWindows(new Date('2026-03-01T00:30:00+02:00')).today).toBe('2026-02-28')
  })

  it('when the leap day comes, then the month and week still line up', () => {
    expect(usageWindows(new Date('2028-02-29T12:00:00Z'))).toMatchObject({
      today: '2028-02-29',
      weekStart: '2028-02-28',
      monthStart: '2028-02-01',
    })
  })

  it('when asked for the end of a day, then it is the next midnight UTC', () => {
    expect(msUntilEndOfDay('2026-11-22', new Date('2026-11-22T23:59:59.000Z'))).toBe(1000)
    expect(msUntilEndOfDay('2026-11-21', new Date('2026-11-22T00:00:00.000Z'))).toBe(0)
  })
})
