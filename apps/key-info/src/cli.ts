import { databaseOptions } from '@quartet/core/db'
import { randomUUID } from 'node:crypto'
import { type CliArgs, migrationCommands, runCli } from '@quartet/core/cli'
import { systemClock } from '@quartet/core/clock'
import { createKeyValueStore } from '@quartet/core/kv'
import { migrationsDirFrom } from '@quartet/core/service'
import { loadAppConfig } from './config.ts'
import { createKey } from './domain/keys.ts'
import { parseUsd } from './domain/money.ts'
import { LIMIT_RESETS, type LimitReset } from './domain/ports.ts'
import { recordUsage } from './domain/usage.ts'
import { createDb } from './store/db.ts'
import { createStores, type Stores } from './store/stores.ts'

/**
 * Opens the database (and kv) for one command and closes them afterwards. Writes go through the
 * same stores as the service's, so a running service's cached key records hear of them.
 */
async function withStores<T>(
  run: (stores: Stores) => Promise<T>,
  options: { changesRecords?: boolean } = {},
): Promise<T> {
  const config = loadAppConfig()
  const db = createDb(databaseOptions(config, { poolSize: 2 }))
  const kv = createKeyValueStore({ redisUrl: config.REDIS_URL, keyPrefix: config.REDIS_KEY_PREFIX })
  if (options.changesRecords && kv.kind === 'memory')
    process.stderr.write(
      'warning: REDIS_URL is not set, so services that cache key records in Redis will not hear of ' +
        'this change and may show the old record for up to KEY_CACHE_MAX_AGE_MS\n',
    )
  try {
    return await run(
      createStores(db, kv, {
        maxAgeMs: 0,
        now: Date.now,
        onBumpFailed: (err, hashes) =>
          process.stderr.write(
            `warning: could not tell running services that keys ${hashes.join(', ')} changed ` +
              `(${String(err)}); they may show the old record for up to KEY_CACHE_MAX_AGE_MS\n`,
          ),
      }),
    )
  } finally {
    await db.$disconnect()
    await kv.close()
  }
}

class UsageError extends Error {
  readonly code = 'bad_request'
}

function flag(args: CliArgs, name: string): string | undefined {
  const v = args.flags[name]
  if (v === true) throw new UsageError(`--${name} needs a value`)
  return v
}

function isoUtc(value: string, name: string): Date {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/.test(value) || Number.isNaN(Date.parse(value)))
    throw new UsageError(`--${name} must be an ISO 8601 UTC timestamp ending in Z`)
  return new Date(value)
}

const KNOWN_CREATE_FLAGS = [
  'name',
  'management',
  'limit',
  'limit-reset',
  'expires-at',
  'free-tier',
  'workspace',
]
const KNOWN_RECORD_FLAGS = ['hash', 'amount', 'byok', 'free-model', 'at', 'id']

function rejectUnknown(args: CliArgs, known: string[]): void {
  const unknown = Object.keys(args.flags).filter((f) => !known.includes(f))
  if (unknown.length) throw new UsageError(`unknown flag(s): ${unknown.map((f) => `--${f}`).join(', ')}`)
}

const keysCreate = async (args: CliArgs) => {
  rejectUnknown(args, KNOWN_CREATE_FLAGS)
  const name = flag(args, 'name')?.trim()
  if (!name) throw new UsageError('--name is required')
  const limitText = flag(args, 'limit')
  const limitMicros = limitText === undefined ? null : parseUsd(limitText)
  if (limitMicros === null && limitText !== undefined)
    throw new UsageError('--limit must be a non-negative USD amount with at most 6 decimals')
  const reset = flag(args, 'limit-reset')
  if (reset !== undefined && !(LIMIT_RESETS as readonly string[]).includes(reset))
    throw new UsageError('--limit-reset must be daily, weekly or monthly')
  const expiresText = flag(args, 'expires-at')
  const expiresAt = expiresText === undefined ? null : isoUtc(expiresText, 'expires-at')
  const workspace = flag(args, 'workspace')
  return withStores(async ({ keys }) => {
    let workspaceId: string
    if (workspace !== undefined) {
      if (!/^[0-9a-f-]{36}$/i.test(workspace) || !(await keys.workspaceExists(workspace)))
        throw new UsageError(`--workspace ${workspace}: no such workspace`)
      workspaceId = workspace
    } else workspaceId = await keys.createWorkspace(name)
    const created = await createKey(
      { keys, clock: systemClock },
      { workspaceId, creatorUserId: 'cli' },
      {
        name,
        limitMicros,
        limitReset: (reset as LimitReset | undefined) ?? null,
        includeByokInLimit: false,
        expiresAt,
        isManagementKey: args.flags.management === true,
        isFreeTier: args.flags['free-tier'] === true,
        allowedDataRegions: ['global'],
        freeModelDailyLimit: null,
        externalUser: null,
        externalApiKey: null,
      },
    )
    return { key: created.key, hash: created.data.hash }
  })
}

const usageRecord = async (args: CliArgs) => {
  rejectUnknown(args, KNOWN_RECORD_FLAGS)
  const hash = flag(args, 'hash')
  if (!hash || !/^[0-9a-f]{64}$/.test(hash))
    throw new UsageError('--hash must be a key hash (64 hex characters)')
  const amountText = flag(args, 'amount')
  if (amountText === undefined) throw new UsageError('--amount is required')
  const amountMicros = parseUsd(amountText)
  if (amountMicros === null)
    throw new UsageError('--amount must be a non-negative USD amount with at most 6 decimals')
  const at = flag(args, 'at')
  const id = flag(args, 'id') ?? `cli-${randomUUID()}`
  return withStores(
    async ({ keys, usage, freeModel }) => {
      const key = await keys.find(hash)
      if (!key) throw Object.assign(new Error(`no key with hash ${hash}`), { code: 'key_not_found' })
      const outcome = await recordUsage({ usage, freeModel, clock: systemClock }, key.workspaceId, [
        {
          id,
          keyHash: hash,
          amountMicros,
          byok: args.flags.byok === true,
          freeModel: args.flags['free-model'] === true,
          occurredAt: at === undefined ? null : isoUtc(at, 'at'),
        },
      ])
      return outcome.results[0]
    },
    { changesRecords: true },
  )
}

void runCli('key-info', {
  ...migrationCommands(loadAppConfig, migrationsDirFrom(__dirname)),
  'keys:create': {
    describe:
      'create a key: --name NAME [--management] [--limit USD] [--limit-reset daily|weekly|monthly] [--expires-at ISO] [--free-tier] [--workspace ID]; prints {key, hash}',
    run: keysCreate,
  },
  'usage:record': {
    describe:
      'record one usage event: --hash H --amount USD [--byok] [--free-model] [--at ISO] [--id EVENT_ID]; prints the result',
    run: usageRecord,
  },
}).then((code) => {
  process.exitCode = code
})
