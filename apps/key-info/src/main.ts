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
    return { app: createApp({ config, logger, db, kv }), close: () => db.$disconnect() }
  },
})
