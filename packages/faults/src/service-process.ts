import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import path from 'node:path'
import { freePort, type Sandbox, signal, waitFor } from './sandbox.ts'

export type ServiceName = 'design-archive' | 'key-info' | 'dns-manager' | 'pickup-share'

export const SERVICE_NAMES: readonly ServiceName[] = [
  'design-archive',
  'key-info',
  'dns-manager',
  'pickup-share',
]

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..')

/** Where each run's service logs go (kept after the run, for a failure's diagnosis). */
export const LOG_DIR = path.join(REPO_ROOT, 'packages', 'faults', 'logs')

export interface ExitInfo {
  code: number | null
  signal: NodeJS.Signals | null
  /** performance.now() when the process was seen to exit. */
  at: number
}

/**
 * One service as a real process: the built bundle (`apps/<name>/dist/main.js`), started with
 * an environment made from scratch (nothing of the test run's leaks in), its output in a log
 * file. Restartable on the same port, which is how a crashed pod comes back.
 */
export class ServiceProcess {
  url: string
  /** The scraper's /metrics, on its own port. */
  metricsUrl: string | undefined
  private child: ChildProcess | undefined
  private exitInfo: Promise<ExitInfo> | undefined
  private readonly logFile: string
  private logFd: number

  constructor(
    readonly name: ServiceName,
    public port: number,
    readonly env: Record<string, string>,
    private readonly sandbox: Sandbox,
    logName: string,
    logDir = LOG_DIR,
  ) {
    this.url = `http://127.0.0.1:${port}`
    this.metricsUrl = env.METRICS_PORT ? `http://127.0.0.1:${env.METRICS_PORT}/metrics` : undefined
    mkdirSync(logDir, { recursive: true })
    this.logFile = path.join(logDir, `${logName}-${name}.log`)
    this.logFd = openSync(this.logFile, 'w')
  }

  get appDir(): string {
    return path.join(REPO_ROOT, 'apps', this.name)
  }

  get pid(): number | undefined {
    return this.running ? this.child!.pid : undefined
  }

  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null
  }

  /** Resolves when the current process exits. */
  get exited(): Promise<ExitInfo> {
    if (!this.exitInfo) throw new Error(`${this.name} was never started`)
    return this.exitInfo
  }

  /** The last lines the service printed (JSON log lines), for a failure message. */
  tail(n = 20): string {
    try {
      return readFileSync(this.logFile, 'utf8')
        .split('\n')
        .slice(-n - 1)
        .join('\n')
    } catch {
      return ''
    }
  }

  async start(timeoutMs = 60_000): Promise<void> {
    const first = this.exitInfo === undefined
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startOnce(timeoutMs)
      } catch (err) {
        // A port found free may be taken before the service binds it (by another process, or as
        // the local port of an outgoing connection): on the first start only (kits keep the
        // URL afterwards), the service gets fresh ports and another try.
        if (!first || attempt >= 3 || !this.tail().includes('EADDRINUSE')) throw err
        this.port = await freePort()
        this.env.PORT = String(this.port)
        this.url = `http://127.0.0.1:${this.port}`
        if (this.env.METRICS_PORT) {
          this.env.METRICS_PORT = String(await freePort())
          this.metricsUrl = `http://127.0.0.1:${this.env.METRICS_PORT}/metrics`
        }
        this.note(`--- the port was taken; trying ${this.port}`)
      }
    }
  }

  private async startOnce(timeoutMs: number): Promise<void> {
    if (this.running) throw new Error(`${this.name} is already running`)
    const entry = path.join(this.appDir, 'dist', 'main.js')
    if (!existsSync(entry)) throw new Error(`${entry} is missing: build the apps first`)
    // The log goes straight to a file: through a pipe, a test process busy elsewhere would
    // block the service's synchronous log writes, and the suite would measure its own stall.
    const child = spawn(
      process.execPath,
      [...(process.env.TEST_FAULTS_NODE_ARGS ?? '').split(' ').filter(Boolean), entry],
      {
        cwd: this.appDir,
        env: this.env,
        stdio: ['ignore', this.logFd, this.logFd],
      },
    )
    this.child = child
    this.sandbox.track(child.pid)
    this.note(`--- started pid ${child.pid} at ${new Date().toISOString()}`)
    this.exitInfo = new Promise((resolve) =>
      child.once('exit', (code, sig) => {
        this.sandbox.untrack(child.pid)
        this.note(`--- pid ${child.pid} exited (code ${code}, signal ${sig})`)
        resolve({ code, signal: sig, at: performance.now() })
      }),
    )
    let exited = false
    void this.exitInfo.then(() => (exited = true))
    await waitFor(
      `${this.name} ready`,
      async () => {
        if (exited) throw new Error(`${this.name} exited during start-up:\n${this.tail()}`)
        const res = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2000) })
        await res.arrayBuffer()
        return res.status === 200
      },
      timeoutMs,
      150,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${this.tail()}`)
    })
  }

  /** Sends a signal to the running process; returns its exit. */
  kill(sig: NodeJS.Signals): Promise<ExitInfo> {
    const exited = this.exited
    if (this.running) signal(this.child!.pid!, sig)
    return exited
  }

  async stop(): Promise<void> {
    if (!this.running) return
    const exited = this.exited
    signal(this.child!.pid!, 'SIGTERM')
    const timer = setTimeout(() => this.child?.pid && signal(this.child.pid, 'SIGKILL'), 15_000)
    await exited
    clearTimeout(timer)
  }

  /** Runs the app's operator CLI (`dist/cli.js`) with the service's environment; parses its JSON. */
  cli<T = unknown>(...args: string[]): Promise<T> {
    return new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        [path.join(this.appDir, 'dist', 'cli.js'), ...args],
        { cwd: this.appDir, env: this.env, timeout: 60_000 },
        (err, stdout, stderr) => {
          if (err) return reject(new Error(`${this.name} cli ${args[0]} failed: ${stderr || err.message}`))
          try {
            resolve(JSON.parse(stdout) as T)
          } catch {
            reject(new Error(`${this.name} cli ${args[0]} printed no JSON: ${stdout}`))
          }
        },
      )
    })
  }

  private note(line: string): void {
    if (this.logFd >= 0) writeSync(this.logFd, `${line}\n`)
  }

  closeLog(): void {
    if (this.logFd >= 0) closeSync(this.logFd)
    this.logFd = -1
  }
}

/** Waits until a process exits, or gives up (the caller decides what a hang means). */
export async function exitWithin(service: ServiceProcess, ms: number): Promise<ExitInfo | 'timeout'> {
  let timer: NodeJS.Timeout | undefined
  const result = await Promise.race([
    service.exited,
    new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), ms)
    }),
  ])
  clearTimeout(timer)
  return result
}
