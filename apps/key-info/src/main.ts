import { migrationsDirFrom, runService } from '@quartet/core/service'
import { createApp } from './app.ts'
import { loadAppConfig } from './config.ts'
import { createDb } from './store/db.ts'

void runService({
  name: 'key-info',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: ({ config, logger, kv }) => {
    const db = createDb({
      url: config.DATABASE_URL,
      schema: config.DATABASE_SCHEMA,
      poolSize: config.DATABASE_POOL_SIZE,
    })
    return { app: createApp({ config, logger, db, kv }), close: () => db.$disconnect() }
  },
})
