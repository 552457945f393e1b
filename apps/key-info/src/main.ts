import { databaseOptions } from '@quartet/core/db'
import { migrationsDirFrom, runService } from '@quartet/core/service'
import { createApp } from './app.ts'
import { loadAppConfig } from './config.ts'
import { createDb } from './store/db.ts'

void runService({
  name: 'key-info',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: ({ config, logger, kv }) => {
    const db = createDb(databaseOptions(config))
    // The record cache hears about writes through kv; with the in-process memory kv, a CLI run
    // or another replica could not reach it, so it stays off.
    const cacheKeyRecords = kv.kind === 'redis' && config.KEY_CACHE_MAX_AGE_MS > 0
    logger.info({ cacheKeyRecords, maxAgeMs: config.KEY_CACHE_MAX_AGE_MS }, 'key record cache')
    return {
      app: createApp({ config, logger, db, kv, cacheKeyRecords }),
      close: () => db.$disconnect(),
    }
  },
})
