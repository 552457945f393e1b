import path from 'node:path'
import { systemClock } from '@quartet/core/clock'
import { expectOperationalEndpoints, silentLogger, useTestDeps } from '@quartet/core/testing'
import { schemaDrift } from '@quartet/core/testing/schema-drift'
import { createApp } from '../../src/app.ts'
import { ReleaseCache } from '../../src/domain/release-cache.ts'
import { publishContent } from '../../src/domain/releases.ts'
import { createDb } from '../../src/store/db.ts'
import { createReleaseRepository } from '../../src/store/release-repository.ts'
import { contentDir, validator } from '../helpers.ts'

const deps = useTestDeps({
  migrationsDir: path.join(__dirname, '../../prisma/migrations'),
  prefix: 'design',
  createDb,
})

describe('design-archive skeleton', () => {
  it('when migrated, then the tables match schema.prisma column for column', async () => {
    const schemaPrismaPath = path.join(__dirname, '../../prisma/schema.prisma')
    expect(
      await schemaDrift({ schemaPrismaPath, url: deps.database.url, schema: deps.database.schema }),
    ).toEqual([])
  })

  it('when the schema is migrated, then every model round-trips through the generated client', async () => {
    const body = Buffer.from('{"name":"manifest"}')
    const release = await deps.db.release.create({
      data: {
        version: 'skeleton-1.0.0',
        active: true,
        documents: {
          create: {
            name: 'manifest.json',
            body,
            sha256: 'a'.repeat(64),
            bytes: body.length,
            items: 3,
            schemaVersion: '2.1.0',
          },
        },
      },
      include: { documents: true },
    })
    const read = await deps.db.release.findUniqueOrThrow({
      where: { version: 'skeleton-1.0.0' },
      include: { documents: true },
    })
    expect(read).toEqual(release)
    expect(Buffer.from(read.documents[0]!.body)).toEqual(body)
    expect(read.documents[0]).toMatchObject({ items: 3, schemaVersion: '2.1.0' })
  })

  it('when a second release is made active, then the database refuses two active releases', async () => {
    await expect(
      deps.db.release.create({ data: { version: 'skeleton-1.0.1', active: true } }),
    ).rejects.toThrow(/release_single_active/)
  })

  it('when probed, then health, readiness, metrics and the JSON 404 answer in the code envelope', async () => {
    const repository = createReleaseRepository(deps.db, deps.database.schema)
    await publishContent(
      { releases: repository, validator, clock: systemClock },
      { dir: contentDir, version: 'skeleton-2', activate: true },
    )
    const releases = new ReleaseCache(repository)
    await releases.refresh()
    const app = createApp({
      config: { TRUST_PROXY: ['loopback'] },
      logger: silentLogger(),
      db: deps.db,
      kv: deps.kv,
      releases,
    })
    await expectOperationalEndpoints(app, {
      checks: ['database', 'release'],
      notFoundBody: (id) => ({
        error: { code: 'not_found', message: 'no route for GET /no/such/route', request_id: id },
      }),
    })
  })
})
