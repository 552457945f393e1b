import { z } from 'zod'
import { baseConfigShape, ConfigError, loadConfig, zBool, zTrustProxy } from '../src/config.ts'

const keyInfoSchema = z.object(baseConfigShape({ port: 3002, schema: 'key_info', appName: 'key-info' }))
const DB = 'postgresql://postgres@127.0.0.1:5432/postgres'

function load(env: Record<string, string | undefined>) {
  return loadConfig(keyInfoSchema, { prefix: 'KEY_INFO', env })
}

function configErrorOf(f: () => unknown): ConfigError {
  try {
    f()
  } catch (err) {
    if (err instanceof ConfigError) return err
    throw err
  }
  throw new Error('expected a ConfigError, nothing was thrown')
}

describe('loadConfig', () => {
  it('when only the required variable is set, then every other field takes its default', () => {
    const config = load({ DATABASE_URL: DB })

    expect(config).toEqual({
      PORT: 3002,
      HOST: '0.0.0.0',
      DATABASE_URL: DB,
      DATABASE_SCHEMA: 'key_info',
      DATABASE_POOL_SIZE: 10,
      DATABASE_CONNECT_TIMEOUT_MS: 1000,
      DATABASE_QUERY_TIMEOUT_MS: 1000,
      MIGRATE_ON_START: true,
      REDIS_URL: undefined,
      REDIS_KEY_PREFIX: 'quartet:key-info:',
      REDIS_COMMAND_TIMEOUT_MS: 500,
      TRUST_PROXY: ['loopback'],
      LOG_LEVEL: 'info',
      BODY_LIMIT: '1mb',
      SHUTDOWN_TIMEOUT_MS: 10_000,
      SHUTDOWN_DELAY_MS: 0,
      RATE_LIMIT_IPV6_PREFIX: 64,
    })
  })

  it('when both the prefixed and the plain variable are set, then the prefixed one wins', () => {
    const config = load({ DATABASE_URL: DB, PORT: '4000', KEY_INFO_PORT: '4002' })

    expect(config.PORT).toBe(4002)
  })

  it('when only the plain variable is set, then it is used', () => {
    expect(load({ DATABASE_URL: DB, PORT: '4000' }).PORT).toBe(4000)
  })

  it('when the prefixed variable is empty, then the plain one is used instead', () => {
    expect(load({ DATABASE_URL: DB, PORT: '4000', KEY_INFO_PORT: '  ' }).PORT).toBe(4000)
  })

  it('when a prefixed variable is invalid, then the error names that variable, why, and what it got', () => {
    const err = configErrorOf(() => load({ DATABASE_URL: DB, KEY_INFO_PORT: 'eighty' }))

    expect(err.message).toContain('KEY_INFO_PORT')
    expect(err.message).toMatch(/must be a number/)
    expect(err.message).toContain('"eighty"')
  })

  it('when a port is out of range, then the error says the limit', () => {
    const err = configErrorOf(() => load({ DATABASE_URL: DB, PORT: '70000' }))

    expect(err.problems).toEqual([expect.stringMatching(/^PORT: must be at most 65535 \(got "70000"\)$/)])
  })

  it('when a required variable is missing, then the error names it and says it is not set', () => {
    const err = configErrorOf(() => load({}))

    expect(err.problems).toHaveLength(1)
    expect(err.problems[0]).toMatch(/^DATABASE_URL: is required/)
    expect(err.problems[0]).toContain('(not set)')
  })

  it('when several variables are wrong, then every problem is reported at once', () => {
    const err = configErrorOf(() =>
      load({ KEY_INFO_DATABASE_URL: 'mysql://x', REDIS_URL: 'http://redis', LOG_LEVEL: 'loud' }),
    )

    expect(err.problems).toHaveLength(3)
    expect(err.message).toContain('KEY_INFO_DATABASE_URL: must be a postgresql:// URL')
    expect(err.message).toContain('REDIS_URL: must be a redis:// or rediss:// URL')
    expect(err.message).toContain('LOG_LEVEL')
  })

  it('when the schema name is not a Postgres identifier, then it is refused', () => {
    const err = configErrorOf(() => load({ DATABASE_URL: DB, DATABASE_SCHEMA: 'Key-Info; drop' }))

    expect(err.message).toContain('DATABASE_SCHEMA: must be a lowercase Postgres identifier')
  })

  it('when no env is passed, then process.env is read', () => {
    const schema = z.object({ QUARTET_TEST_ONLY_VALUE: z.string() })
    process.env.CFGTEST_QUARTET_TEST_ONLY_VALUE = 'from-process-env'
    try {
      expect(loadConfig(schema, { prefix: 'CFGTEST' }).QUARTET_TEST_ONLY_VALUE).toBe('from-process-env')
    } finally {
      delete process.env.CFGTEST_QUARTET_TEST_ONLY_VALUE
    }
  })
})

describe('zTrustProxy', () => {
  const schema = z.object({ TRUST_PROXY: zTrustProxy('loopback') })
  const parse = (value: string | undefined) =>
    loadConfig(schema, { prefix: 'APP', env: { TRUST_PROXY: value } })

  it('when unset, then the default is parsed into a list', () => {
    expect(parse(undefined).TRUST_PROXY).toEqual(['loopback'])
  })

  it.each([
    ['0', 0],
    ['1', 1],
    [' 2 ', 2],
  ])('when given the hop count %j, then it is the number %d', (value, expected) => {
    expect(parse(value).TRUST_PROXY).toBe(expected)
  })

  it('when given a CIDR list with spaces and named subnets, then it is a trimmed list', () => {
    expect(parse('loopback, 10.0.0.0/8 ,2001:db8::/32, 192.0.2.1').TRUST_PROXY).toEqual([
      'loopback',
      '10.0.0.0/8',
      '2001:db8::/32',
      '192.0.2.1',
    ])
  })

  it.each(['true', 'TRUE', 'false', 'yes'])('when given %j, then it is refused with the reason', (value) => {
    const err = configErrorOf(() => parse(value))

    expect(err.message).toContain('TRUST_PROXY')
    expect(err.message).toMatch(/hop count .* never true\/false/)
  })

  it.each(['10.0.0.0/33', '300.0.0.0/8', 'proxy.internal', '2001:db8::/129'])(
    'when given the bad entry %j, then it is refused naming the entry',
    (value) => {
      const err = configErrorOf(() => parse(`loopback,${value}`))

      expect(err.message).toContain(`${JSON.stringify(value)} is not an IP address or CIDR`)
    },
  )
})

describe('zBool', () => {
  const schema = z.object({ FLAG: zBool(false), ON_BY_DEFAULT: zBool(true) })
  const parse = (env: Record<string, string>) => loadConfig(schema, { prefix: 'APP', env })

  it('when unset, then each takes its fallback', () => {
    expect(parse({})).toEqual({ FLAG: false, ON_BY_DEFAULT: true })
  })

  it.each(['1', 'true', 'TRUE', 'yes', 'on', ' On '])('when given %j, then it is true', (value) => {
    expect(parse({ FLAG: value }).FLAG).toBe(true)
  })

  it.each(['0', 'false', 'False', 'no', 'off'])('when given %j, then it is false', (value) => {
    expect(parse({ ON_BY_DEFAULT: value }).ON_BY_DEFAULT).toBe(false)
  })

  it('when given something else, then it is refused naming the variable', () => {
    const err = configErrorOf(() => parse({ APP_FLAG: 'maybe' }))

    expect(err.problems).toEqual(['APP_FLAG: must be true or false (got "maybe")'])
  })
})
