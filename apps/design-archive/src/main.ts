import { databaseOptions } from '@quartet/core/db'
import { systemClock } from '@quartet/core/clock'
import { migrationsDirFrom, runService } from '@quartet/core/service'
import { createApp } from './app.ts'
import { loadAppConfig } from './config.ts'
import { bundledContentDir, schemasDir } from './content-location.ts'
import { ContentValidator } from './domain/content.ts'
import { ReleaseCache } from './domain/release-cache.ts'
import { seedBundledContent } from './domain/releases.ts'
import { createDb } from './store/db.ts'
import { createReleaseRepository } from './store/release-repository.ts'

void runService({
  name: 'design-archive',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: async ({ config, logger, kv, whenAvailable }) => {
    const db = createDb(databaseOptions(config))
    const repository = createReleaseRepository(db, config.DATABASE_SCHEMA)
    const contentDir = bundledContentDir(__dirname)
    if (config.SEED_ON_START) {
      const validator = () => new ContentValidator(schemasDir(contentDir))
      const seeded = await whenAvailable('seeding the first release', () =>
        seedBundledContent(
          { releases: repository, validator, clock: systemClock },
          { dir: contentDir, version: config.SEED_VERSION },
        ),
      )
      if (seeded)
        logger.info({ version: seeded.version }, 'published the bundled content as the first release')
    }
    const releases = new ReleaseCache(repository, { logger })
    await whenAvailable('loading the active release', () => releases.refresh())
    if (!releases.current()) logger.warn('no active release: documents answer 503 until one is activated')
    releases.start(config.RELEASE_POLL_MS)
    return {
      app: createApp({ config, logger, db, kv, releases }),
      close: async () => {
        releases.stop()
        await db.$disconnect()
      },
    }
  },
})
