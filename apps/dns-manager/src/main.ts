import { migrationsDirFrom, runService } from '@quartet/core/service'
import { buildDnsManager } from './app.ts'
import { loadAppConfig } from './config.ts'
import { createDb } from './store/db.ts'

void runService({
  name: 'dns-manager',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: ({ config, logger, kv }) => {
    const db = createDb({
      url: config.DATABASE_URL,
      schema: config.DATABASE_SCHEMA,
      poolSize: config.DATABASE_POOL_SIZE,
    })
    const { app, service } = buildDnsManager({ config, logger, db, kv })
    // The sweeper releases subdomains past their grace period; reconcile rolls back writes a crash left pending.
    let running = false
    const timer =
      config.JOBS_INTERVAL_MS > 0
        ? setInterval(() => {
            if (running) return
            running = true
            void (async () => {
              try {
                const swept = await service.sweepExpired()
                const reconciled = await service.reconcilePending()
                if (
                  swept.released.length ||
                  swept.failed.length ||
                  reconciled.rolled_back.length ||
                  reconciled.failed.length
                )
                  logger.info({ swept, reconciled }, 'background jobs ran')
              } catch (err) {
                logger.error({ err }, 'background jobs failed')
              } finally {
                running = false
              }
            })()
          }, config.JOBS_INTERVAL_MS)
        : undefined
    timer?.unref()
    return {
      app,
      close: async () => {
        if (timer) clearInterval(timer)
        await db.$disconnect()
      },
    }
  },
})
