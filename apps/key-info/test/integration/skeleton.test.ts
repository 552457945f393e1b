import path from 'node:path'
import { expectOperationalEndpoints } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { buildApp, useKeyInfoDeps } from '../helpers.ts'

const deps = useKeyInfoDeps()
const app = () => buildApp(deps)

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
    const key = await deps.db.apiKey.create({
      data: {
        hash: 'a'.repeat(64),
        workspaceId: created.id,
        name: 'k',
        label: 'sk-qk-v1-aaa...aaa',
        limitMicros: 12_500_000n,
        limitReset: 'weekly',
        allowedDataRegions: ['europe', 'us'],
        freeModelDailyLimit: 7,
        creatorUserId: 'u1',
        organizationId: 'org1',
        expiresAt: new Date('2030-01-01T00:00:00.123Z'),
      },
    })
    expect(await deps.db.apiKey.findUniqueOrThrow({ where: { hash: key.hash } })).toEqual(key)
    const daily = await deps.db.apiKeyDailyUsage.create({
      data: {
        keyHash: key.hash,
        day: new Date('2026-11-22'),
        usageMicros: 5n,
        byokUsageMicros: 6n,
        freeModelRequests: 3,
      },
    })
    expect(
      await deps.db.apiKeyDailyUsage.findUniqueOrThrow({
        where: { keyHash_day: { keyHash: key.hash, day: daily.day } },
      }),
    ).toEqual(daily)
    const event = await deps.db.usageEvent.create({
      data: {
        workspaceId: created.id,
        id: 'e1',
        keyHash: key.hash,
        amountMicros: 1n,
        byok: true,
        freeModel: false,
        occurredAt: new Date('2026-11-22T10:00:00Z'),
      },
    })
    expect(
      await deps.db.usageEvent.findUniqueOrThrow({
        where: { workspaceId_id: { workspaceId: created.id, id: 'e1' } },
      }),
    ).toEqual(event)
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the seed envelope', async () => {
    await expectOperationalEndpoints(app(), {
      checks: ['database', 'kv'],
      notFoundBody: () => ({ error: { code: 404, message: 'no route for GET /no/such/route' } }),
    })
  })
})
