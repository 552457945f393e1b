import path from 'node:path'
import { expectOperationalEndpoints, silentLogger, useTestDeps } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { createApp } from '../../src/app.ts'
import { createDb } from '../../src/store/db.ts'

const deps = useTestDeps({
  migrationsDir: path.join(__dirname, '../../prisma/migrations'),
  prefix: 'dns',
  createDb,
})
const app = () =>
  createApp({
    config: { TRUST_PROXY: ['loopback'], BODY_LIMIT: '1mb' },
    logger: silentLogger(),
    db: deps.db,
    kv: deps.kv,
  })

describe('dns-manager skeleton', () => {
  it('when migrated, then the tables match schema.prisma column for column', async () => {
    const schemaPrismaPath = path.join(__dirname, '../../prisma/schema.prisma')
    expect(
      await schemaDrift({ schemaPrismaPath, url: deps.database.url, schema: deps.database.schema }),
    ).toEqual([])
  })

  it('when the schema is migrated, then every model round-trips through the generated client', async () => {
    const created = await deps.db.account.create({
      data: {
        email: 'owner@example.test',
        balanceCents: 500,
        ipAllowList: ['192.0.2.0/24', '2001:db8::/32'],
      },
    })
    const read = await deps.db.account.findUniqueOrThrow({ where: { id: created.id } })
    expect(read).toEqual(created)
    expect(read).toMatchObject({
      quotaTotal: 5,
      apiAccessEnabled: true,
      ipAllowList: ['192.0.2.0/24', '2001:db8::/32'],
    })
  })

  it('when a balance would go negative, then the database refuses it', async () => {
    const account = await deps.db.account.create({ data: { email: 'poor@example.test', balanceCents: 100 } })
    await expect(
      deps.db.account.update({ where: { id: account.id }, data: { balanceCents: { decrement: 101 } } }),
    ).rejects.toThrow()
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the REST envelope', async () => {
    await expectOperationalEndpoints(app(), {
      checks: ['database', 'kv'],
      notFoundBody: (id) => ({
        success: false,
        error: { code: 'not_found', message: 'no route for GET /no/such/route' },
        request_id: id,
      }),
    })
  })
})
