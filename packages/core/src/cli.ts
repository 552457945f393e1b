/**
 * Operator commands print JSON on stdout (one document per command) so they can be piped into jq
 * or another program; failures print `{"error":{...}}` on stderr and exit non-zero.
 */
export type CliCommand = (args: CliArgs) => Promise<unknown>

export interface CliArgs {
  positional: string[]
  flags: Record<string, string | true>
}

export function parseCliArgs(argv: string[]): { command: string | undefined; args: CliArgs } {
  const [command, ...rest] = argv
  const positional: string[] = []
  const flags: Record<string, string | true> = {}
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=')
      if (eq > 0) flags[arg.slice(2, eq)] = arg.slice(eq + 1)
      else if (rest[i + 1] !== undefined && !rest[i + 1]!.startsWith('--')) flags[arg.slice(2)] = rest[++i]!
      else flags[arg.slice(2)] = true
    } else positional.push(arg)
  }
  return { command, args: { positional, flags } }
}

export async function runCli(
  name: string,
  commands: Record<string, { describe: string; run: CliCommand }>,
  argv: string[] = process.argv.slice(2),
): Promise<number> {
  const { command, args } = parseCliArgs(argv)
  if (!command || command === 'help' || args.flags.help) {
    const list = Object.entries(commands).map(([c, { describe }]) => ({ command: c, describe }))
    process.stdout.write(`${JSON.stringify({ cli: name, commands: list }, null, 2)}\n`)
    return command ? 0 : 2
  }
  const entry = commands[command]
  if (!entry) {
    process.stderr.write(
      `${JSON.stringify({ error: { code: 'unknown_command', message: `no command ${command}` } })}\n`,
    )
    return 2
  }
  try {
    const result = await entry.run(args)
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
    return 0
  } catch (err) {
    const e = err as { code?: unknown; message?: string }
    process.stderr.write(
      `${JSON.stringify({ error: { code: typeof e.code === 'string' ? e.code : 'failed', message: e.message ?? String(err) } })}\n`,
    )
    return 1
  }
}

/** The commands every app's CLI has: apply migrations and show their state. */
export function migrationCommands(
  loadConfig: () => { DATABASE_URL: string; DATABASE_SCHEMA: string },
  migrationsDir: string,
): Record<string, { describe: string; run: CliCommand }> {
  const target = () => {
    const config = loadConfig()
    return { connectionString: config.DATABASE_URL, schema: config.DATABASE_SCHEMA, migrationsDir }
  }
  return {
    migrate: {
      describe: "apply pending migrations to this app's schema",
      run: async () => {
        const { applyMigrations } = await import('./migrate.ts')
        return applyMigrations(target())
      },
    },
    'migrate:status': {
      describe: 'list migrations and whether each is applied, pending, modified or failed',
      run: async () => {
        const { migrationStatus } = await import('./migrate.ts')
        return migrationStatus(target())
      },
    },
  }
}
