import path from 'node:path'
import { expectOperationalEndpoints, silentLogger, useTestDeps } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { createApp } from '../../src/app.ts'
import { createDb } from '../../src/store/db.ts'

const deps = useTestDeps({
  migrationsDir: path.join(__dirname, '../../prisma/migrations'),
  prefix: 'keys',
  createDb,
})
const app = () =>
  createApp({
    config: { TRUST_PROXY: ['loopback'], BODY_LIMIT: '1mb' },
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
  })

describe('key-info skeleton', () => {
  it('when migrated, then the tables match schema.prisma column for column', async () => {
    const schemaPrismaPath = path.join(__dirname, '../../prisma/schema.prisma')
    expect(
      await schemaDrift({ schemaPrismaPath, url: deps.database.url, schema: deps.database.schema }),
    ).toEqual([])
  })

  it('when the schema is migrated, then every model round-trips through the generated client', async () => {
    const created = await deps.db.workspace.create({ data: { name: 'acme' } })
    expect(await deps.db.workspace.findUniqueOrThrow({ where: { id: created.id } })).toEqual(created)
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the seed envelope', async () => {
    await expectOperationalEndpoints(app(), {
      checks: ['database', 'kv'],
      notFoundBody: () => ({ error: { code: 404, message: 'no route for GET /no/such/route' } }),
    })
  })
})
