import path from 'node:path'
import { expectOperationalEndpoints, request, silentLogger, useTestDeps } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { createApp } from '../../src/app.ts'
import { createDb } from '../../src/store/db.ts'
import { testConfig } from '../support/harness.ts'

const deps = useTestDeps({
  migrationsDir: path.join(__dirname, '../../prisma/migrations'),
  prefix: 'share',
  createDb,
})
const app = () =>
  createApp({
    config: testConfig(),
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
  })

describe('pickup-share skeleton', () => {
  it('when migrated, then the tables match schema.prisma column for column', async () => {
    const schemaPrismaPath = path.join(__dirname, '../../prisma/schema.prisma')
    expect(
      await schemaDrift({ schemaPrismaPath, url: deps.database.url, schema: deps.database.schema }),
    ).toEqual([])
  })

  it('when the schema is migrated, then every model round-trips through the generated client', async () => {
    const value = { unlimitedMode: false, defaultExpireDays: 7, nested: { list: [1, 'two', null] } }
    const created = await deps.db.setting.create({ data: { key: 'site', value } })
    const read = await deps.db.setting.findUniqueOrThrow({ where: { key: 'site' } })
    expect(read).toEqual(created)
    expect(read.value).toEqual(value)
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the code envelope', async () => {
    await expectOperationalEndpoints(app(), {
      checks: ['database', 'kv'],
      notFoundBody: (id) => ({
        error: { code: 'not_found', message: 'no route for GET /no/such/route', request_id: id },
      }),
    })
  })

  it('when /openapi.json is read, then it is OpenAPI 3.1 and lists every public and admin path', async () => {
    const res = await request(app()).get('/openapi.json').expect(200)
    expect(res.body.openapi).toBe('3.1.0')
    expect(Object.keys(res.body.paths).sort()).toEqual([
      '/api/admin/audit',
      '/api/admin/authcodes',
      '/api/admin/login',
      '/api/admin/logout',
      '/api/admin/settings',
      '/api/admin/shares',
      '/api/admin/stores',
      '/api/admin/stores/test',
      '/api/auth-code/check',
      '/api/blob/upload',
      '/api/blob/vercel/',
      '/api/download',
      '/api/download-all',
      '/api/preview',
      '/api/repo/upload',
      '/api/share',
      '/api/site',
      '/api/take',
      '/api/tus/{instance}',
      '/api/tus/{instance}/{id}',
      '/api/upload',
    ])
    expect(
      res.body.paths['/api/share'].post.requestBody.content['application/json'].schema.properties,
    ).toHaveProperty('maxDownloads')
  })
})
