import { loadAppConfig } from '../../src/config.ts'

const base = { DATABASE_URL: 'postgresql://u@127.0.0.1:5432/db' }

describe('key-info config', () => {
  it('when nothing is set, then the per-key rate limit and free-model limits take their defaults', () => {
    expect(loadAppConfig(base)).toMatchObject({
      PORT: 3002,
      DATABASE_SCHEMA: 'key_info',
      KEY_RATE_LIMIT_PER_MINUTE: 600,
      FREE_MODEL_DAILY_LIMIT: 1000,
      FREE_TIER_FREE_MODEL_DAILY_LIMIT: 50,
    })
  })

  it('when the prefixed name is set too, then it wins over the plain one', () => {
    const config = loadAppConfig({
      ...base,
      KEY_RATE_LIMIT_PER_MINUTE: '100',
      KEY_INFO_KEY_RATE_LIMIT_PER_MINUTE: '120',
      FREE_TIER_FREE_MODEL_DAILY_LIMIT: '20',
    })
    expect(config.KEY_RATE_LIMIT_PER_MINUTE).toBe(120)
    expect(config.FREE_TIER_FREE_MODEL_DAILY_LIMIT).toBe(20)
  })

  it('when a value is not a whole number in range, then loading fails naming the variable', () => {
    expect(() => loadAppConfig({ ...base, KEY_RATE_LIMIT_PER_MINUTE: '0' })).toThrow(
      /KEY_RATE_LIMIT_PER_MINUTE/,
    )
    expect(() => loadAppConfig({ ...base, KEY_INFO_FREE_MODEL_DAILY_LIMIT: 'lots' })).toThrow(
      /KEY_INFO_FREE_MODEL_DAILY_LIMIT/,
    )
  })
})
