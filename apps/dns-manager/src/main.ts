import { databaseOptions } from '@quartet/core/db'
import { startPeriodicJob } from '@quartet/core/jobs'
import { migrationsDirFrom, runService } from '@quartet/core/service'
import { buildDnsManager } from './app.ts'
import { loadAppConfig } from './config.ts'
import { createDb } from './store/db.ts'

void runService({
  name: 'dns-manager',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: ({ config, logger, kv }) => {
    const db = createDb(databaseOptions(config))
    const { app, service } = buildDnsManager({ config, logger, db, kv })
    // The sweeper releases subdomains past their grace period; reconcile rolls back writes a crash left pending.
    const jobs = startPeriodicJob({
      name: 'sweep-and-reconcile',
      intervalMs: config.JOBS_INTERVAL_MS,
      logger,
      run: async () => {
        const swept = await service.sweepExpired()
        const reconciled = await service.reconcilePending()
        const changed =
          swept.released.length ||
          swept.failed.length ||
          reconciled.rolled_back.length ||
          reconciled.failed.length
        if (changed) logger.info({ swept, reconciled }, 'background jobs ran')
      },
    })
    return {
      app,
      close: async () => {
        jobs.stop()
        await db.$disconnect()
      },
    }
  },
})
