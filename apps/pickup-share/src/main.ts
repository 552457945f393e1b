import { databaseOptions } from '@quartet/core/db'
import { startPeriodicJob } from '@quartet/core/jobs'
import { migrationsDirFrom, runService } from '@quartet/core/service'
import { buildPickupShare } from './app.ts'
import { loadAppConfig } from './config.ts'
import { BucketDriver } from './drivers/bucket-driver.ts'
import { createDb } from './store/db.ts'
import { SWEEP_LOCK_ID, withAdvisoryLock } from './store/lock-repository.ts'

void runService({
  name: 'pickup-share',
  loadConfig: () => loadAppConfig(),
  migrationsDir: migrationsDirFrom(__dirname),
  build: async ({ config, logger, kv }) => {
    const db = createDb(databaseOptions(config))
    if (!config.UPLOAD_TOKEN_SECRET)
      logger.warn(
        'UPLOAD_TOKEN_SECRET is not set: upload tokens are signed with a per-process key (single node only)',
      )
    if (!config.ADMIN_PASSWORD_HASH && !config.ADMIN_PASSWORD)
      logger.warn('no ADMIN_PASSWORD_HASH or ADMIN_PASSWORD: the admin area is disabled')
    const { app, services } = buildPickupShare({ config, logger, db, kv })
    for (const driver of services.storage.all())
      if (driver instanceof BucketDriver && config.S3_CREATE_BUCKET) await driver.ensureBucket()
    logger.info({ stores: services.storage.all().map((d) => `${d.kind}:${d.instance}`) }, 'storage ready')
    // Uploads a crash cut off (kill -9) leave temporary files no quota counts: removed now, and by
    // every sweep once untouched for longer than an upload window.
    await services.cleanup
      .removePartials()
      .catch((err: unknown) => logger.warn({ err }, 'start-up clean-up of partial uploads failed'))

    const sweeper = startPeriodicJob({
      name: 'sweep',
      intervalMs: config.SWEEP_INTERVAL_SECONDS * 1000,
      logger,
      run: async () => {
        const result = await withAdvisoryLock(db, SWEEP_LOCK_ID, () => services.cleanup.sweep())
        if (result) logger.info(result, 'sweep done')
      },
    })
    return {
      app,
      close: async () => {
        sweeper.stop()
        await db.$disconnect()
      },
    }
  },
})
