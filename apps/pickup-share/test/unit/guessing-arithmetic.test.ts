import { expectedGuessHitsPerYear } from '../../src/domain/guess-guard.ts'
import { ZSettings } from '../../src/domain/settings.ts'

describe('the arithmetic behind the pickup code length (README "Guessing pickup codes")', () => {
  it('when the settings are the defaults, then 10,000 live shares expect fewer than one guessed code a year', () => {
    const hits = expectedGuessHitsPerYear(ZSettings.parse({}), 10_000)
    expect(hits).toBeCloseTo(0.473, 3)
    expect(hits).toBeLessThan(1)
  })

  it('when codes had the old 8 digits and limits, then thousands of codes a year would be guessed', () => {
    const old = {
      codeLength: 8,
      takeFailuresGlobal: 1000,
      guessThrottlePerMinute: 0,
      takeFailureWindowSeconds: 600,
    }
    expect(expectedGuessHitsPerYear(old, 10_000)).toBeGreaterThan(5000)
  })

  it('when codes were 10 digits with the default limits, then the expectation would be above one a year', () => {
    expect(expectedGuessHitsPerYear({ ...ZSettings.parse({}), codeLength: 10 }, 10_000)).toBeGreaterThan(1)
  })
})
