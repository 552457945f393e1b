import { loadAppConfig } from '../../src/config.ts'

const base = { DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres' }

describe('config', () => {
  it('when only the database is set, then blob is on and bucket is off with the documented defaults', () => {
    const c = loadAppConfig(base)
    expect(c).toMatchObject({
      BLOB_DIR: '.data/blobs',
      S3_REGION: 'us-east-1',
      UPLOAD_TOKEN_TTL_SECONDS: 1800,
      UPLOAD_PERMISSIONS_PER_ADDRESS: 120,
      UPLOAD_PERMISSIONS_GLOBAL: 6000,
      UPLOAD_LIMIT_WINDOW_SECONDS: 600,
      UPLOAD_PENDING_BYTES_PER_ADDRESS: 10 * 1024 ** 3,
      UPLOAD_PENDING_BYTES_GLOBAL: 100 * 1024 ** 3,
      UPLOAD_PENDING_STORE_FRACTION: 0.25,
      UPLOAD_IDLE_RELEASE_SECONDS: 300,
      ORPHAN_AFTER_HOURS: 24,
      SWEEP_INTERVAL_SECONDS: 300,
    })
    expect(c.S3_ENDPOINT).toBeUndefined()
  })

  it('when the app prefix is used, then it wins', () => {
    expect(loadAppConfig({ ...base, BLOB_DIR: '/a', PICKUP_SHARE_BLOB_DIR: '/b' }).BLOB_DIR).toBe('/b')
  })

  it('when S3 settings are partial or the endpoint has no scheme, then start-up fails naming the variable', () => {
    expect(() => loadAppConfig({ ...base, S3_ENDPOINT: 'http://s3.localhost:8080' })).toThrow(/S3_ENDPOINT/)
    expect(() =>
      loadAppConfig({
        ...base,
        S3_ENDPOINT: 's3.localhost:8080',
        S3_ACCESS_KEY: 'a',
        S3_SECRET_KEY: 'b',
        S3_BUCKET: 'c',
      }),
    ).toThrow(/S3_ENDPOINT/)
    expect(() => loadAppConfig({ ...base, UPLOAD_TOKEN_SECRET: 'short' })).toThrow(/UPLOAD_TOKEN_SECRET/)
  })

  it('when the store fraction is not in (0, 1] or the idle window is not a whole number of seconds, then start-up fails naming it', () => {
    expect(
      loadAppConfig({ ...base, UPLOAD_PENDING_STORE_FRACTION: '0.5' }).UPLOAD_PENDING_STORE_FRACTION,
    ).toBe(0.5)
    for (const bad of ['0', '1.5', 'half'])
      expect(() => loadAppConfig({ ...base, UPLOAD_PENDING_STORE_FRACTION: bad })).toThrow(
        /UPLOAD_PENDING_STORE_FRACTION/,
      )
    expect(() => loadAppConfig({ ...base, UPLOAD_IDLE_RELEASE_SECONDS: '0' })).toThrow(
      /UPLOAD_IDLE_RELEASE_SECONDS/,
    )
  })
})
