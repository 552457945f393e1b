import path from 'node:path'
import { expectOperationalEndpoints, silentLogger, useTestDeps } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { createApp } from '../../src/app.ts'
import { createDb } from '../../src/store/db.ts'

const deps = useTestDeps({
  migrationsDir: path.join(__dirname, '../../prisma/migrations'),
  prefix: 'share',
  createDb,
})
const app = () =>
  createApp({
    config: { TRUST_PROXY: ['loopback'], BODY_LIMIT: '1mb' },
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
})
