import { loadAppConfig } from '../../src/config.ts'

const base = { DATABASE_URL: 'postgresql://u@127.0.0.1:5432/db' }

describe('design-archive config', () => {
  it('when nothing is set, then the documented defaults apply', () => {
    expect(loadAppConfig(base)).toMatchObject({
      PORT: 3001,
      DATABASE_SCHEMA: 'design_archive',
      CACHE_CONTROL: 'public, max-age=300, stale-while-revalidate=86400',
      RELEASE_POLL_MS: 2000,
      SEED_ON_START: true,
      SEED_VERSION: '1.0.0',
      DOCUMENT_ACCESS_LOG: false,
    })
  })

  it('when prefixed variables are set, then they win over plain ones', () => {
    const config = loadAppConfig({
      ...base,
      CACHE_CONTROL: 'no-cache',
      DESIGN_ARCHIVE_CACHE_CONTROL: 'public, max-age=60',
      DESIGN_ARCHIVE_RELEASE_POLL_MS: '500',
      DESIGN_ARCHIVE_DOCUMENT_ACCESS_LOG: 'true',
    })
    expect(config).toMatchObject({
      CACHE_CONTROL: 'public, max-age=60',
      RELEASE_POLL_MS: 500,
      DOCUMENT_ACCESS_LOG: true,
    })
  })

  it.each([
    ['RELEASE_POLL_MS', '10'],
    ['SEED_VERSION', '../1'],
    ['SEED_ON_START', 'maybe'],
    ['CACHE_CONTROL', 'public\r\nSet-Cookie: x=1'],
  ])('when %s is %j, then loading fails naming the variable', (name, value) => {
    expect(() => loadAppConfig({ ...base, [name]: value })).toThrow(name)
  })
})
