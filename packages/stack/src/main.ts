import { existsSync } from 'node:fs'
import path from 'node:path'
import { REPO_ROOT, SERVICES } from './services.ts'
import { metricsBanner } from './metrics-banner.ts'
import { prettyLine, prettyWanted } from './pretty.ts'
import { startStack } from './stack.ts'

/**
 * `pnpm start` (built bundles) and `pnpm dev` (sources with reload): all four services on one
 * machine. Settings come from the environment, or from a `.env` at the repository root.
 */
async function main(): Promise<void> {
  const watch = process.argv.includes('--watch')
  const replicasArg = process.argv.indexOf('--replicas')
  const replicas = replicasArg === -1 ? 1 : Number(process.argv[replicasArg + 1])
  const envFile = path.join(REPO_ROOT, '.env')
  if (existsSync(envFile)) process.loadEnvFile(envFile)

  // Replicas print as `key-info#2`.
  const width = Math.max(...SERVICES.map((s) => s.name.length)) + (replicas > 1 ? 3 : 0)
  // In a terminal, one short coloured line per event; JSON lines when piped or in containers.
  const pretty = prettyWanted(process.stdout, process.env)
  const status = (message: string) => process.stdout.write(`${'stack'.padEnd(width)} | ${message}\n`)
  const stack = await startStack({
    env: process.env,
    watch,
    onLine: pretty
      ? (name, line) => process.stdout.write(`${prettyLine(name.padEnd(width), line, pretty)}\n`)
      : (name, line) => process.stdout.write(`${name.padEnd(width)} | ${line}\n`),
    onStatus: status,
    replicas,
  })

  const rows = SERVICES.map((spec) => {
    const urls = stack.services.filter((s) => s.name === spec.name).map((s) => s.url)
    return `  ${spec.name.padEnd(width)}  ${urls.join(' ').padEnd(24)}  ${spec.paths}`
  })
  process.stdout.write(`\nQuartet is up${watch ? ' (reloading on change)' : ''}:\n${rows.join('\n')}\n`)
  if (stack.proxyUrl) {
    const port = new URL(stack.proxyUrl).port
    const hosts = SERVICES.map((spec) => `http://${process.env[spec.hostVar] ?? spec.defaultHost}:${port}`)
    process.stdout.write(
      `${replicas} replicas of each behind caddy on ${stack.proxyUrl}: ${hosts.join(' ')}\n` +
        `Rolling restart (one replica at a time): kill -HUP ${process.pid}\n`,
    )
  }
  process.stdout.write(
    `Every service answers /healthz and /readyz.\n${metricsBanner(SERVICES, process.env, width)}\n` +
      'Ctrl-C stops them all.\n\n',
  )

  let exitCode = 0
  const shutdown = async (why: string) => {
    status(`${why}: stopping the services`)
    await stack.stop()
    status('stopped')
    process.exit(exitCode)
  }
  process.on('SIGHUP', () => {
    status('SIGHUP: rolling restart')
    stack.rollingRestart().then(
      () => status('rolling restart done'),
      (err: Error) => status(`rolling restart failed: ${err.message}`),
    )
  })
  process.once('SIGINT', () => void shutdown('SIGINT'))
  process.once('SIGTERM', () => void shutdown('SIGTERM'))
  if (!watch) {
    const { name, code, signal } = await stack.exited
    exitCode = 1
    await shutdown(`${name} exited (${signal ?? `code ${code}`})`)
  }
}

main().catch((err: Error) => {
  process.stderr.write(`stack: ${err.message}\n`)
  process.exit(1)
})
