import { type ChildProcess, spawn } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { EMBEDDED_DEADLINES } from '@quartet/core/db'
import { type EmbeddedPostgres, startEmbeddedPostgres } from '@quartet/core/embedded-postgres'
import { SERVICE_ENVIRONMENT, SERVICE_NODE_FLAGS } from './runtime-settings.ts'
import { appDir, REPO_ROOT, SERVICES, type ServiceSpec } from './services.ts'

/** Two of Caddy's 1 s health intervals: long enough for a restarted replica to be taken back in. */
const CADDY_HEALTH_SETTLE_MS = 2_000

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
  /**
   * Processes per service (default 1). Above 1, a local Caddy with the compose Caddyfile
   * load-balances each service's replicas on `PROXY_PORT` (default 8080), and REDIS_URL must be
   * set: counters and limits in one process's memory would not be shared.
   */
  replicas?: number
}

export interface RunningService {
  name: string
  /** 0 … replicas-1. */
  replica: number
  /** `key-info`, or `key-info#2` with replicas. */
  label: string
  url: string
  child: ChildProcess
  exit: Promise<{ code: number | null; addressInUse: boolean }>
}

export interface Stack {
  services: RunningService[]
  databaseUrl: string
  embedded: boolean
  /** Resolves with the first service that exits while the stack should be running. */
  exited: Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>
  /** With replicas: Caddy's address, which routes by host name to every replica. */
  proxyUrl: string | null
  /**
   * Restarts every process, one replica of a service at a time (services side by side), each
   * only after the one before is ready again: behind the proxy, nothing fails meanwhile.
   */
  rollingRestart(): Promise<void>
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

  const replicas = options.replicas ?? 1
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > 16)
    throw new Error(`--replicas must be a whole number from 1 to 16, got ${options.replicas}`)
  if (replicas > 1) {
    if (!env.REDIS_URL)
      throw new Error(
        '--replicas needs REDIS_URL: with counters and limits in each process’s memory, replicas would not share them',
      )
    // After SIGTERM a replica keeps answering (Connection: close, /readyz 503) longer than the
    // proxy keeps an idle connection (4 s), so no request is sent into a closing socket.
    env.SHUTDOWN_DELAY_MS ??= '5000'
  }

  const children: RunningService[] = []
  /** Every process started and not yet exited, for stop() whatever state start-up reached. */
  const spawned = new Set<ChildProcess>()
  let stopping = false
  /** A process that exits before it is ready is startReplica's to handle. */
  const startingUp = new Set<ChildProcess>()
  const restarting = new Set<ChildProcess>()
  let reportExit: (e: { name: string; code: number | null; signal: NodeJS.Signals | null }) => void = () => {}
  const exited = new Promise<{ name: string; code: number | null; signal: NodeJS.Signals | null }>(
    (resolve) => {
      reportExit = resolve
    },
  )

  const spawnReplica = (spec: ServiceSpec, replica: number, port: number): RunningService => {
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
        // Stacks still name the functions (only whitespace and comments are minified); for mapped
        // positions run `node --enable-source-maps apps/<app>/dist/main.js`, or `pnpm dev`.
        // The image's V8 flags (runtime-settings.ts).
        [...SERVICE_NODE_FLAGS, entry]
    const child = spawn(process.execPath, args, {
      cwd: dir,
      // The image's malloc settings, unless the operator set their own.
      env: { ...SERVICE_ENVIRONMENT, ...env, [`${spec.envPrefix}_PORT`]: String(port), PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const label = replicas > 1 ? `${spec.name}#${replica + 1}` : spec.name
    let addressInUse = false
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream! }).on('line', (line) => {
        if (line.includes('EADDRINUSE')) addressInUse = true
        options.onLine(label, line)
      })
    }
    spawned.add(child)
    const exit = new Promise<{ code: number | null; addressInUse: boolean }>((resolve) =>
      child.on('exit', (code, signal) => {
        spawned.delete(child)
        if (!stopping && !restarting.has(child) && !startingUp.has(child))
          reportExit({ name: label, code, signal })
        resolve({ code, addressInUse })
      }),
    )
    return { name: spec.name, replica, url: `http://127.0.0.1:${port}`, child, label, exit }
  }

  /**
   * One replica until it is ready. A port picked for an extra replica may be taken by someone
   * else before the replica binds it: then it tries another (the service's own port, never).
   */
  const startReplica = async (spec: ServiceSpec, replica: number, port: number, retryPorts: boolean) => {
    for (let attempt = 1; ; attempt++) {
      const r = spawnReplica(spec, replica, port)
      startingUp.add(r.child)
      const gone = () => r.child.exitCode !== null || r.child.signalCode !== null
      const failure = await waitReady(r.url, 60_000, gone).then(
        () => null,
        (err: Error) => err,
      )
      startingUp.delete(r.child)
      if (failure === null) return r
      if (!gone()) throw failure
      const outcome = await r.exit
      if (outcome.addressInUse && retryPorts && attempt < 4) {
        port = await freePort()
        continue
      }
      throw new Error(`${r.label} exited with code ${outcome.code} during start-up`)
    }
  }

  let proxy: Awaited<ReturnType<typeof startProxy>> | undefined
  let proxyUrl: string | null = null
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    if (proxy) await terminate(proxy.child)
    await Promise.all([...spawned].map((child) => terminate(child)))
    await embedded?.stop()
    releaseLock()
  }

  try {
    const starting: Array<Promise<RunningService>> = []
    for (const spec of SERVICES) {
      const first = portOf(spec, env)
      for (let replica = 0; replica < replicas; replica++)
        // The first replica takes the service's port; the others, free ones.
        starting.push(
          (replica === 0 ? Promise.resolve(first) : freePort()).then((port) =>
            startReplica(spec, replica, port, replica > 0),
          ),
        )
    }
    children.push(...(await Promise.all(starting)))
    if (replicas > 1) {
      proxy = await startProxy(env, children, path.join(dataDir, 'caddy'))
      proxyUrl = proxy.url
      proxy.child.on('exit', (code, signal) => {
        if (!stopping) reportExit({ name: 'caddy', code, signal })
      })
    }
  } catch (err) {
    await stop()
    throw err
  }

  const rollingRestart = async (): Promise<void> => {
    await Promise.all(
      SERVICES.map(async (spec) => {
        for (const old of children.filter((c) => c.name === spec.name)) {
          if (stopping) return
          // SIGTERM turns the replica's /readyz to 503 at once; Caddy's health check leaves it
          // out within a second, well inside SHUTDOWN_DELAY_MS, while it finishes its requests.
          restarting.add(old.child)
          await terminate(old.child)
          restarting.delete(old.child)
          // The same port, so Caddy's list of upstreams stays right; its health check takes the
          // new process in once /readyz answers 200.
          const fresh = await startReplica(spec, old.replica, Number(new URL(old.url).port), false)
          children[children.indexOf(old)] = fresh
          options.onStatus(`${old.label} restarted and ready`)
          // Ready here is not yet healthy for Caddy, which marked the port down while it
          // restarted and checks it once a second (infra/caddy/health-readyz.caddy): stopping the
          // next replica before its check took this one back left no healthy upstream (a 503
          // from Caddy itself, seen in the replicas test).
          await new Promise((resolve) => setTimeout(resolve, CADDY_HEALTH_SETTLE_MS))
        }
      }),
    )
  }

  return {
    services: children,
    databaseUrl: env.DATABASE_URL,
    embedded: embedded !== undefined,
    exited,
    proxyUrl,
    rollingRestart,
    stop,
  }
}

/**
 * Debian's (or any) caddy with the very Caddyfile docker-compose uses: each service's upstream
 * variable lists all its replicas, which Caddy load-balances (and retries on another while one
 * restarts: lb_try_duration in the Caddyfile).
 */
async function startProxy(env: NodeJS.ProcessEnv, children: RunningService[], stateDir: string) {
  mkdirSync(stateDir, { recursive: true })
  const port = env.PROXY_PORT ?? '8080'
  const upstreamVar: Record<ServiceSpec['name'], string> = {
    'design-archive': 'DESIGN_UPSTREAM',
    'key-info': 'KEYS_UPSTREAM',
    'dns-manager': 'DNS_UPSTREAM',
    'pickup-share': 'SHARE_UPSTREAM',
  }
  const caddyEnv: NodeJS.ProcessEnv = {
    PATH: env.PATH,
    HOME: stateDir,
    XDG_CONFIG_HOME: stateDir,
    XDG_DATA_HOME: stateDir,
    PROXY_PORT: port,
    // Each replica's /readyz is checked every second (infra/caddy/health-readyz.caddy).
    UPSTREAM_HEALTH: 'health-readyz.caddy',
  }
  for (const spec of SERVICES) {
    caddyEnv[upstreamVar[spec.name]] = children
      .filter((c) => c.name === spec.name)
      .map((c) => new URL(c.url).host)
      .join(' ')
    caddyEnv[spec.hostVar] = env[spec.hostVar] ?? spec.defaultHost
  }
  // Caddy's own log (upstreams it could not reach, retries) goes to a file beside its state.
  const log = createWriteStream(path.join(stateDir, 'caddy.log'), { flags: 'a' })
  const child = spawn('caddy', ['run', '--config', CADDYFILE, '--adapter', 'caddyfile'], {
    env: caddyEnv,
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let output = ''
  child.stderr!.on('data', (d: Buffer) => {
    log.write(d)
    output = (output + d.toString()).slice(-4000)
  })
  child.once('exit', () => log.end())
  const spawned = await new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null))
    child.once('error', resolve)
  })
  if (spawned)
    throw new Error(
      `--replicas needs caddy on PATH (Debian: caddy) to balance the replicas: ${spawned.message}`,
    )
  const url = `http://127.0.0.1:${port}`
  const host = env.KEYS_HOST ?? 'keys.localhost'
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`caddy exited: ${output}`)
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(`${url}/healthz`, { headers: { host } }, (res) => {
        res.resume()
        resolve(res.statusCode === 200)
      })
      req.on('error', () => resolve(false))
    })
    if (ok) return { child, url }
    await new Promise((r) => setTimeout(r, 200))
  }
  child.kill('SIGKILL')
  throw new Error(`caddy did not answer on ${url} within 15 s: ${output}`)
}

const CADDYFILE = path.join(REPO_ROOT, 'infra', 'caddy', 'Caddyfile')

/** A free loopback port (the OS picks one; it is released and handed on). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
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

async function waitReady(url: string, timeoutMs: number, gone: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let last = 'no answer'
  while (Date.now() < deadline && !gone()) {
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
