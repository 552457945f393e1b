import { databaseOptions } from '@quartet/core/db'
import { hashPassword } from '@quartet/core/auth'
import { migrationCommands, runCli } from '@quartet/core/cli'
import { createKeyValueStore } from '@quartet/core/kv'
import { createLogger } from '@quartet/core/log'
import { migrationsDirFrom } from '@quartet/core/service'
import { loadAppConfig } from './config.ts'
import { type PickupShare, wireServices } from './app.ts'
import { createDb } from './store/db.ts'
import { SWEEP_LOCK_ID, withAdvisoryLock } from './store/lock-repository.ts'

/** Opens the app's dependencies for one command and closes them afterwards. */
async function withServices<T>(
  fn: (s: PickupShare['services'], db: ReturnType<typeof createDb>) => Promise<T>,
) {
  const config = loadAppConfig()
  const db = createDb(databaseOptions(config, { poolSize: 2 }))
  const kv = createKeyValueStore({ redisUrl: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX })
  const logger = createLogger({ name: 'pickup-share-cli', level: 'warn', destination: process.stderr })
  try {
    return await fn(wireServices({ config, logger, db, kv }), db)
  } finally {
    await db.$disconnect()
    await kv.close()
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const c of process.stdin) chunks.push(c as Buffer)
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '')
}

void runCli('pickup-share', {
  ...migrationCommands(loadAppConfig, migrationsDirFrom(__dirname)),
  'hash-password': {
    describe: 'print an scrypt hash for ADMIN_PASSWORD_HASH (password on stdin, or --password)',
    run: async (args) => {
      const password = typeof args.flags.password === 'string' ? args.flags.password : await readStdin()
      if (password.length < 12) throw new Error('use an admin password of at least 12 characters')
      return { ADMIN_PASSWORD_HASH: await hashPassword(password) }
    },
  },
  sweep: {
    describe: 'remove expired shares and orphan uploads now (skipped if another replica is sweeping)',
    run: () =>
      withServices(async (s, db) => {
        const result = await withAdvisoryLock(db, SWEEP_LOCK_ID, () => s.cleanup.sweep())
        return result ?? { skipped: 'another process holds the sweep lock' }
      }),
  },
  'authcode:create': {
    describe: 'issue an authorization code: --scope downloads|size|both --hours N [--note text]',
    run: (args) =>
      withServices(async (s) => {
        const scope = String(args.flags.scope ?? 'both')
        if (!['downloads', 'size', 'both'].includes(scope))
          throw new Error('--scope must be downloads, size or both')
        const hours = Number(args.flags.hours ?? 24)
        if (!Number.isInteger(hours) || hours < 1 || hours > 8760) throw new Error('--hours must be 1..8760')
        const note = typeof args.flags.note === 'string' ? args.flags.note : 'issued from the CLI'
        const { code, record } = await s.authCodes.issue({
          scope: scope as 'both',
          expiresInHours: hours,
          note,
        })
        await s.audit.append({
          actor: 'cli',
          action: 'authcode.create',
          target: record.id,
          details: { scope },
        })
        return { id: record.id, code, scope, expiresAt: record.expiresAt.toISOString() }
      }),
  },
  settings: {
    describe: 'print the site settings',
    run: () => withServices((s) => s.settings.get()),
  },
}).then((code) => {
  process.exitCode = code
})
