import { microsToUsd, parseUsd, usdToMicros } from '../../src/domain/money.ts'

describe('money (integer micro-USD)', () => {
  it('when USD numbers with up to 6 decimals arrive, then they convert exactly', () => {
    expect(usdToMicros(0)).toBe(0n)
    expect(usdToMicros(0.1)).toBe(100_000n)
    expect(usdToMicros(0.000001)).toBe(1n)
    expect(usdToMicros(123.456789)).toBe(123_456_789n)
    expect(usdToMicros(1_000_000_000)).toBe(1_000_000_000_000_000n)
  })

  it('when a value is negative, not finite, too fine or too large, then it is refused', () => {
    for (const bad of [-0.01, NaN, Infinity, -Infinity, 0.0000001, 1.2345678, 1_000_000_000.5, 2e9]) {
      expect([bad, usdToMicros(bad)]).toEqual([bad, null])
    }
  })

  it('when micro-USD are rendered, then the JSON number is the exact decimal', () => {
    expect(microsToUsd(300_000n)).toBe(0.3)
    expect(microsToUsd(100_000n + 200_000n)).toBe(0.3)
    expect(microsToUsd(1n)).toBe(0.000001)
    expect(microsToUsd(12_500_000n)).toBe(12.5)
    expect(microsToUsd(0n)).toBe(0)
    expect(JSON.stringify({ v: microsToUsd(300_001n) })).toBe('{"v":0.300001}')
  })

  it('when decimal text is parsed (CLI), then plain non-negative decimals with up to 6 places pass', () => {
    expect(parseUsd('3')).toBe(3_000_000n)
    expect(parseUsd('0.25')).toBe(250_000n)
    expect(parseUsd('0.000001')).toBe(1n)
    for (const bad of ['-1', 'NaN', 'Infinity', '1e3', '0.0000001', '', '1.', '.5', 'abc', '99999999999'])
      expect([bad, parseUsd(bad)]).toEqual([bad, null])
  })
})
