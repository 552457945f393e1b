import { databaseOptions } from '@quartet/core/db'
import { createKeyValueStore } from '@quartet/core/kv'
import { isValidCidrOrIp } from '@quartet/core/auth'
import { type CliArgs, migrationCommands, runCli } from '@quartet/core/cli'
import { migrationsDirFrom } from '@quartet/core/service'
import { z } from 'zod'
import { loadAppConfig, type TConfig } from './config.ts'
import { createProvider } from './providers/index.ts'
import { normaliseHostname } from './domain/names.ts'
import { issueCredential } from './domain/use-cases.ts'
import { createInvite } from './domain/people-signup.ts'
import { systemClock } from '@quartet/core/clock'
import { createDb } from './store/db.ts'
import { createRepository } from './store/repository.ts'
import { createPrincipalVersions, versionedStores } from './store/principal-cache.ts'

/**
 * Runs `fn` with a repository on the configured database, closing the pool afterwards. With
 * Redis, a change to an account or credential replaces its version token there, as the
 * service's own writes do, so running services stop using their cached copies at once.
 */
async function withRepository<T>(
  fn: (repo: ReturnType<typeof createRepository>, prefix: string, config: TConfig) => Promise<T>,
) {
  const config = loadAppConfig()
  const db = createDb(databaseOptions(config, { poolSize: 1 }))
  const kv = config.REDIS_URL
    ? createKeyValueStore({
        redisUrl: config.REDIS_URL,
        keyPrefix: config.REDIS_KEY_PREFIX,
        commandTimeoutMs: config.REDIS_COMMAND_TIMEOUT_MS,
      })
    : null
  try {
    let repo = createRepository(db, config.DATABASE_SCHEMA)
    if (kv)
      repo = versionedStores(repo, createPrincipalVersions(kv), (err) => {
        throw new CliError(
          'service_unavailable',
          `the change is committed, but Redis did not hear of it (${(err as Error).message}): running services may use their cached copy for up to PRINCIPAL_CACHE_MAX_AGE_MS`,
        )
      })
    return await fn(repo, config.API_KEY_PREFIX, config)
  } finally {
    await kv?.close()
    await db.$disconnect()
  }
}

class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const flag = (args: CliArgs, name: string): string | undefined => {
  const v = args.flags[name]
  if (v === true) throw new CliError('bad_request', `--${name} needs a value`)
  return v
}
const intFlag = (args: CliArgs, name: string, min: number, fallback?: number): number => {
  const raw = flag(args, name)
  if (raw === undefined) {
    if (fallback === undefined) throw new CliError('bad_request', `--${name} is required`)
    return fallback
  }
  if (!/^\d+$/.test(raw) || Number(raw) < min)
    throw new CliError('bad_request', `--${name} must be a whole number ≥ ${min}`)
  return Number(raw)
}

/** `--allow-ip` may repeat (parseCliArgs keeps the last), so read every occurrence from argv; commas also split. */
function allowIps(argv: string[]): string[] | undefined {
  const found: string[] = []
  argv.forEach((a, i) => {
    if (a === '--allow-ip' && argv[i + 1]) found.push(argv[i + 1]!)
    else if (a.startsWith('--allow-ip=')) found.push(a.slice('--allow-ip='.length))
  })
  if (found.length === 0) return undefined
  const list = found
    .flatMap((f) => f.split(','))
    .map((s) => s.trim())
    .filter(Boolean)
  for (const entry of list)
    if (!isValidCidrOrIp(entry)) throw new CliError('bad_request', `--allow-ip ${entry} is not an IP or CIDR`)
  return list
}

const argv = process.argv.slice(2)
const zEmail = z.email()

void runCli('dns-manager', {
  ...migrationCommands(loadAppConfig, migrationsDirFrom(__dirname)),
  'accounts:create': {
    describe:
      'create an account and its first API key: --email E --quota N --balance-cents N [--allow-ip CIDR]… [--disable-api]; prints {account_id, api_key, api_secret}',
    run: (args) =>
      withRepository(async (repo, prefix) => {
        const email = flag(args, 'email')
        if (!email || !zEmail.safeParse(email).success)
          throw new CliError('bad_request', '--email must be an email address')
        const c = issueCredential(prefix)
        const account = await repo.createAccount({
          email: email.toLowerCase(),
          quotaTotal: intFlag(args, 'quota', 0, 5),
          balanceCents: intFlag(args, 'balance-cents', 0, 0),
          apiAccessEnabled: args.flags['disable-api'] !== true,
          ipAllowList: allowIps(argv) ?? [],
          credential: c.stored,
        })
        return { account_id: account.id, api_key: c.apiKey, api_secret: c.apiSecret }
      }),
  },
  'accounts:update': {
    describe:
      'change an account: --account ID [--email E] [--quota N] [--allow-ip CIDR]… [--clear-allow-list] [--enable-api|--disable-api]',
    run: (args) =>
      withRepository(async (repo) => {
        const id = flag(args, 'account')
        if (!id || !z.uuid().safeParse(id).success)
          throw new CliError('bad_request', '--account must be an account id')
        const email = flag(args, 'email')
        const ips = allowIps(argv)
        const updated = await repo.updateAccount(id, {
          ...(email ? { email: email.toLowerCase() } : {}),
          ...(args.flags.quota !== undefined ? { quotaTotal: intFlag(args, 'quota', 0) } : {}),
          ...(ips ? { ipAllowList: ips } : args.flags['clear-allow-list'] ? { ipAllowList: [] } : {}),
          ...(args.flags['enable-api'] ? { apiAccessEnabled: true } : {}),
          ...(args.flags['disable-api'] ? { apiAccessEnabled: false } : {}),
        })
        if (!updated) throw new CliError('not_found', `no account ${id}`)
        return { account: updated }
      }),
  },
  'zones:add': {
    describe:
      'offer a root zone (or change its price): NAME --price-cents N --term-years N (0 = never expires)',
    run: (args) =>
      withRepository(async (repo, _prefix, config) => {
        const raw = args.positional[0]
        if (!raw) throw new CliError('bad_request', 'the zone name is required (zones:add example.org …)')
        let name: string
        try {
          name = normaliseHostname(raw, 'zone')
        } catch (err) {
          throw new CliError('bad_request', (err as Error).message)
        }
        const termYears = intFlag(args, 'term-years', 0, 1)
        if (termYears > 10) throw new CliError('bad_request', '--term-years must be at most 10')
        const priceCents = intFlag(args, 'price-cents', 0, 0)
        // The zone must exist upstream before records can go there (PowerDNS: created when missing).
        const provider = createProvider(config)
        const upstream = provider.ensureZone
          ? await provider.ensureZone(name, config.NAMESERVERS)
          : 'not managed'
        const zone = await repo.upsertZone({ name, priceCents, termYears })
        return {
          zone: { name: zone.name, price_cents: zone.priceCents, term_years: zone.termYears },
          upstream: { provider: provider.kind, zone: upstream },
        }
      }),
  },
  'invites:create': {
    describe:
      'an invitation link for the back office (REGISTRATION=invite): [--hours N] (default 168); prints {invite_url, expires_at}; the link works once',
    run: (args) =>
      withRepository(async (repo, _prefix, config) => {
        const hours = intFlag(args, 'hours', 1, 168)
        if (hours > 24 * 90) throw new CliError('bad_request', '--hours must be at most 2160 (90 days)')
        return createInvite(
          { people: repo, clock: systemClock, settings: { publicUrl: config.PUBLIC_URL } },
          { validHours: hours },
        )
      }),
  },
  'balance:credit': {
    describe: 'add to an account balance: --account ID --cents N',
    run: (args) =>
      withRepository(async (repo) => {
        const id = flag(args, 'account')
        if (!id || !z.uuid().safeParse(id).success)
          throw new CliError('bad_request', '--account must be an account id')
        const account = await repo.creditBalance(id, intFlag(args, 'cents', 1))
        if (!account) throw new CliError('not_found', `no account ${id}`)
        return { account_id: account.id, balance_cents: account.balanceCents }
      }),
  },
}).then((code) => {
  process.exitCode = code
})
