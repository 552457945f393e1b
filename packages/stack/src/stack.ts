import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { EMBEDDED_DEADLINES } from '@quartet/core/db'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '@quartet/core/embedded-postgres'
import { appDir, REPO_ROOT, SERVICES, type ServiceSpec } from './services.ts'

export interface StackOptions {
  env: NodeJS.ProcessEnv
  /** Run the TypeScript sources with reload (pnpm dev) instead of the built bundles (pnpm start). */
  watch: boolean
  /** Where embedded data lives (default QUARTET_DATA_DIR, else <repo>/.data). */
  dataDir?: string
  /** Every line a service prints, with the service's name. */
  onLine: (service: string, line: string) => void
  /** Status lines of the launcher itself. */
  onStatus: (message: string) => void
}

export interface RunningService {
  name: string
  url: string
  child: ChildProcess
}

export interface Stack {
  services: RunningService[]
  databaseUrl: string
  embedded: boolean
  /** Resolves with the first service that exits while the stack should be running. */
  exited: Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>
  stop(): Promise<void>
}

export function portOf(spec: ServiceSpec, env: NodeJS.ProcessEnv): number {
  const raw = env[`${spec.envPrefix}_PORT`]
  const port = raw === undefined || raw === '' ? spec.defaultPort : Number(raw)
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`${spec.envPrefix}_PORT must be a port number, got ${JSON.stringify(raw)}`)
  }
  return port
}

export async function startStack(options: StackOptions): Promise<Stack> {
  const env = { ...options.env }
  const dataDir = options.dataDir ?? env.QUARTET_DATA_DIR ?? path.join(REPO_ROOT, '.data')
  let embedded: EmbeddedPostgres | undefined
  let releaseLock = () => {}

  if (!env.DATABASE_URL) {
    releaseLock = lockDataDir(dataDir)
    const pgDir = path.join(dataDir, 'pglite')
    embedded = await startEmbeddedPostgres({ dataDir: pgDir, port: Number(env.EMBEDDED_POSTGRES_PORT ?? 0) })
    env.DATABASE_URL = embedded.url
    // The embedded Postgres serves one session at a time (the others wait their turn) and cannot
    // cancel a statement: production's deadlines of about a second would refuse honest waits.
    env.DATABASE_CONNECT_TIMEOUT_MS ??= String(EMBEDDED_DEADLINES.connectTimeoutMs)
    env.DATABASE_QUERY_TIMEOUT_MS ??= String(EMBEDDED_DEADLINES.queryTimeoutMs)
    options.onStatus(
      `DATABASE_URL is not set: embedded Postgres (PGlite) on ${embedded.url}, data in ${pgDir}`,
    )
  }
  if (!env.REDIS_URL) {
    options.onStatus(
      'REDIS_URL is not set: each service keeps counters and rate limits in its own memory (single node)',
    )
  }
  if (!env.S3_ENDPOINT && !env.PICKUP_SHARE_S3_ENDPOINT) {
    env.PICKUP_SHARE_BLOB_DIR ??= path.join(dataDir, 'blobs')
  }

  const children: RunningService[] = []
  let stopping = false
  let reportExit: (e: { name: string; code: number | null; signal: NodeJS.Signals | null }) => void = () => {}
  const exited = new Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>(
    (resolve) => {
      reportExit = resolve
    },
  )

  for (const spec of SERVICES) {
    const port = portOf(spec, env)
    const dir = appDir(spec)
    const entry = options.watch ? path.join(dir, 'src', 'main.ts') : path.join(dir, 'dist', 'main.js')
    if (!existsSync(entry))
      throw new Error(`${entry} is missing: run \`pnpm build\` (pnpm start does it for you)`)
    const args = options.watch
      ? [
          path.join(REPO_ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
          'watch',
          '--clear-screen=false',
          entry,
        ]
      : // No --enable-source-maps: node then parses each bundle's map at start and maps every
        // error's stack through it, which cost each service 10–70 MB (bench/memory, BENCHMARKS.md).
        // Stacks still name the functions (the bundles are not minified); for mapped ones run
        // `node --enable-source-maps apps/<app>/dist/main.js`, or `pnpm dev`.
        [entry]
    const child = spawn(process.execPath, args, {
      cwd: dir,
      env: { ...env, [`${spec.envPrefix}_PORT`]: String(port), PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on('line', (line) => options.onLine(spec.name, line))
    }
    child.on('exit', (code, signal) => {
      if (!stopping) reportExit({ name: spec.name, code, signal })
    })
    children.push({ name: spec.name, url: `http://127.0.0.1:${port}`, child })
  }

  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    await Promise.all(children.map(({ child }) => terminate(child)))
    await embedded?.stop()
    releaseLock()
  }

  try {
    await Promise.race([
      Promise.all(children.map((s) => waitReady(s.url, 60_000))),
      exited.then(({ name, code }) => {
        throw new Error(`${name} exited with code ${code} during start-up`)
      }),
    ])
  } catch (err) {
    await stop()
    throw err
  }
  return { services: children, databaseUrl: env.DATABASE_URL, embedded: embedded !== undefined, exited, stop }
}

/** SIGTERM lets the service finish in-flight requests; SIGKILL only if it hangs. */
function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.once('exit', () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill('SIGTERM')
  })
}

async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'no answer'
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${url}/readyz`)
      if (res.ok) return
      last = `readyz ${res.status}: ${await res.text()}`
    } catch (err) {
      last = (err as Error).message
    }
    await new Promise((r) => setTimeout(r, 250))
  }
  throw new Error(`${url} was not ready within ${timeoutMs / 1000} s (${last})`)
}

/**
 * PGlite's files must have one owner: a second launcher on the same data folder would corrupt
 * them. A pid file refuses that, and a stale one (its process gone) is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true })
  const lock = path.join(dataDir, 'stack.pid')
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8'))
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid)) {
      throw new Error(`another stack (pid ${pid}) is using ${dataDir}; stop it first`)
    }
  }
  writeFileSync(lock, String(process.pid))
  return () => rmSync(lock, { force: true })
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
