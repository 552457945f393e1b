import { databaseOptions } from '@quartet/core/db'
import { startPeriodicJob } from '@quartet/core/jobs'
import { migrationsDirFrom, runService } from '@quartet/core/service'
import { buildDnsManager } from './app.ts'
import { loadAppConfig } from './config.ts'
import { createRepairScheduler } from './repair-scheduler.ts'
import { createDb } from './store/db.ts'

void runService({
  name: 'dns-manager',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: ({ config, logger, kv }) => {
    const db = createDb(databaseOptions(config))
    if (!config.SMTP_URL)
      logger.warn(
        'SMTP_URL is not set: the back office writes its mails (sign-up and reset links) to this log instead of sending them',
      )
    let kick = () => {}
    // The principal cache hears about writes through kv; with the in-process memory kv, a CLI
    // run or another replica could not reach it, so it stays off.
    const cachePrincipals = kv.kind === 'redis' && config.PRINCIPAL_CACHE_MAX_AGE_MS > 0
    logger.info({ cachePrincipals, maxAgeMs: config.PRINCIPAL_CACHE_MAX_AGE_MS }, 'principal cache')
    const { app, useCases } = buildDnsManager({
      config,
      logger,
      db,
      kv,
      cachePrincipals,
      onUnknownOutcome: () => kick(),
    })
    const repairs = createRepairScheduler({ run: () => useCases.repairUpstream(), logger })
    kick = repairs.kick
    // The sweeper releases subdomains past their grace period; reconcile finishes what a crash
    // left pending; repair re-asserts RRsets whose upstream state is unknown.
    const jobs = startPeriodicJob({
      name: 'sweep-and-reconcile',
      intervalMs: config.JOBS_INTERVAL_MS,
      logger,
      run: async () => {
        const swept = await useCases.sweepExpired()
        const reconciled = await useCases.reconcilePending()
        const repaired = await useCases.repairUpstream()
        const changed =
          swept.released.length ||
          swept.failed.length ||
          reconciled.rolled_back.length ||
          reconciled.failed.length ||
          repaired.checked
        if (changed) logger.info({ swept, reconciled, repaired }, 'background jobs ran')
      },
    })
    // Anti-entropy: every zone upstream against the database, one replica at a time.
    const antiEntropy = startPeriodicJob({
      name: 'anti-entropy',
      intervalMs: config.ANTI_ENTROPY_INTERVAL_MS,
      logger,
      run: async () => {
        const result = await useCases.reconcileUpstream()
        if (result.repaired.length) logger.info({ ...result }, 'anti-entropy repaired the upstream')
      },
    })
    return {
      app,
      close: async () => {
        jobs.stop()
        antiEntropy.stop()
        repairs.stop()
        await db.$disconnect()
      },
    }
  },
})
