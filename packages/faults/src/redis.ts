import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import net from 'node:net'
import { freePort, type Sandbox, signal, waitFor } from './sandbox.ts'

/**
 * A Redis the suite owns: `redis-server` on its own port as a child process, with no
 * persistence, so a stop is a loss of everything it held (as a restarted cache node is).
 */
export class OwnRedis {
  readonly port: number
  readonly url: string
  private child: ChildProcess | undefined
  private frozen = false

  private constructor(
    private readonly sandbox: Sandbox,
    port: number,
  ) {
    this.port = port
    this.url = `redis://127.0.0.1:${port}`
  }

  static async create(sandbox: Sandbox): Promise<OwnRedis> {
    const redis = new OwnRedis(sandbox, await freePort())
    await redis.start()
    return redis
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined
  }

  async start(): Promise<void> {
    if (this.pid) throw new Error('Redis is already running')
    // Straight to a file, never through a pipe this process must drain.
    const log = openSync(this.sandbox.path('redis.log'), 'a')
    const child = spawn(
      process.env.TEST_FAULTS_REDIS_SERVER ?? 'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.sandbox.dir,
      ],
      { stdio: ['ignore', log, log] },
    )
    closeSync(log)
    this.child = child
    this.sandbox.track(child.pid)
    child.once('exit', () => this.sandbox.untrack(child.pid))
    await waitFor('Redis answering PING', () => this.ping(), 15_000)
  }

  /** PING on a fresh connection, answered within `timeoutMs`. */
  ping(timeoutMs = 1000): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = net.connect(this.port, '127.0.0.1')
      const done = (ok: boolean) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(ok)
      }
      const timer = setTimeout(() => done(false), timeoutMs)
      socket.once('error', () => done(false))
      socket.once('connect', () => socket.write('PING\r\n'))
      socket.once('data', (data) => done(data.toString().startsWith('+PONG')))
    })
  }

  /** SIGKILL: Redis is gone at once, and with it every key. */
  async stop(): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    signal(child.pid!, 'SIGCONT')
    signal(child.pid!, 'SIGKILL')
    this.frozen = false
    await exited
  }

  async restart(): Promise<void> {
    await this.stop()
    await this.start()
  }

  /** SIGSTOP: connections stay open, nothing answers. */
  freeze(): void {
    if (!this.pid) throw new Error('Redis is not running')
    signal(this.pid, 'SIGSTOP')
    this.frozen = true
  }

  thaw(): void {
    if (this.frozen && this.pid) signal(this.pid, 'SIGCONT')
    this.frozen = false
  }

  async close(): Promise<void> {
    await this.stop()
  }
}
