import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { closeSync, existsSync, openSync, readdirSync } from 'node:fs'
import path from 'node:path'
import pg from 'pg'
import { childPids, freePort, postgresUser, type Sandbox, signal, waitFor } from './sandbox.ts'

/**
 * A throwaway Postgres cluster the suite owns: initdb into the sandbox, its own port, the
 * server process a direct child of the test run. Stopping, freezing and restarting it never
 * touches any other Postgres on the machine.
 */
export class OwnPostgres {
  readonly port: number
  readonly url: string
  private child: ChildProcess | undefined
  private frozen: number[] = []

  private constructor(
    private readonly sandbox: Sandbox,
    private readonly bindir: string,
    private readonly dataDir: string,
    port: number,
  ) {
    this.port = port
    this.url = `postgresql://postgres@127.0.0.1:${port}/postgres`
  }

  static async create(sandbox: Sandbox): Promise<OwnPostgres> {
    const bindir = postgresBindir()
    const dataDir = sandbox.path('pgdata')
    const result = spawnSync(
      path.join(bindir, 'initdb'),
      ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
      { ...asPostgresUser(), encoding: 'utf8' },
    )
    if (result.status !== 0) throw new Error(`initdb failed: ${result.stderr || result.error?.message}`)
    const cluster = new OwnPostgres(sandbox, bindir, dataDir, await freePort())
    await cluster.start()
    return cluster
  }

  /** The postmaster's pid while it runs. */
  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined
  }

  async start(): Promise<void> {
    if (this.pid) throw new Error('Postgres is already running')
    // Straight to a file, never through a pipe this process must drain.
    const log = openSync(this.sandbox.path('postgres.log'), 'a')
    const child = spawn(
      path.join(this.bindir, 'postgres'),
      [
        '-D',
        this.dataDir,
        '-p',
        String(this.port),
        '-k',
        this.sandbox.dir,
        '-c',
        'listen_addresses=127.0.0.1',
        // No fsync: a process crash keeps what was written (the kernel has it); only the
        // machine crashing would lose it, and that is not what the suite tests.
        '-c',
        'fsync=off',
        '-c',
        'full_page_writes=off',
        '-c',
        'max_connections=200',
        '-c',
        'shared_buffers=32MB',
      ],
      { ...asPostgresUser(), stdio: ['ignore', log, log] },
    )
    closeSync(log)
    this.child = child
    this.sandbox.track(child.pid)
    child.once('exit', () => this.sandbox.untrack(child.pid))
    await waitFor('Postgres accepting connections', () => this.ping(1000), 30_000)
  }

  /** True when a new connection can run a query within `timeoutMs`. */
  async ping(timeoutMs = 1000): Promise<boolean> {
    const client = new pg.Client({
      connectionString: this.url,
      connectionTimeoutMillis: timeoutMs,
      query_timeout: timeoutMs,
    })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.query('SELECT 1')
      return true
    } finally {
      await client.end().catch(() => {})
    }
  }

  /**
   * Stops the server. `immediate` (SIGQUIT) is a crash as clients see it: every backend ends
   * at once and the next start runs crash recovery; `fast` (SIGINT) rolls back and closes
   * sessions first.
   */
  async stop(mode: 'immediate' | 'fast' = 'immediate'): Promise<void> {
    const child = this.child
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    this.thaw()
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    signal(child.pid!, mode === 'immediate' ? 'SIGQUIT' : 'SIGINT')
    await exited
    // Backends of an immediate stop exit on their own; wait so that the port is free again.
    await waitFor('Postgres backends gone', async () => childPids(child.pid!).length === 0, 10_000, 50)
  }

  async restart(): Promise<void> {
    await this.stop()
    await this.start()
  }

  /**
   * SIGSTOP on the postmaster and every backend: a stalled disk or a network partition as a
   * client sees it. TCP connections still open (the kernel accepts them), nothing answers.
   */
  freeze(): void {
    const pid = this.pid
    if (!pid) throw new Error('Postgres is not running')
    signal(pid, 'SIGSTOP')
    // Listed after the postmaster stopped, so no backend is forked meanwhile.
    this.frozen = [pid, ...childPids(pid)]
    for (const child of this.frozen.slice(1)) signal(child, 'SIGSTOP')
  }

  thaw(): void {
    for (const pid of this.frozen.slice(1)) signal(pid, 'SIGCONT')
    if (this.frozen[0]) signal(this.frozen[0], 'SIGCONT')
    this.frozen = []
  }

  /** A query on a fresh connection, for seeding and invariant checks. */
  async query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params: unknown[] = [],
  ): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000 })
    client.on('error', () => {})
    await client.connect()
    try {
      return (await client.query<R>(sql, params)).rows
    } finally {
      await client.end().catch(() => {})
    }
  }

  async close(): Promise<void> {
    await this.stop('immediate')
  }
}

/** The newest Postgres server on the machine (Debian's layout), or TEST_FAULTS_PG_BINDIR. */
export function postgresBindir(): string {
  const configured = process.env.TEST_FAULTS_PG_BINDIR
  if (configured) return configured
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(path.join(root, v, 'bin', 'postgres')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  if (!versions[0]) throw new Error(`no Postgres server under ${root}; set TEST_FAULTS_PG_BINDIR`)
  return path.join(root, versions[0], 'bin')
}

/** Postgres refuses to run as root: as root, run its programs as the `postgres` user. */
function asPostgresUser(): { uid?: number; gid?: number; env: NodeJS.ProcessEnv } {
  const env = { PATH: process.env.PATH, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' }
  if (process.getuid?.() !== 0) return { env }
  const user = postgresUser()
  if (!user) throw new Error('running as root, but there is no postgres user to run the server as')
  return { uid: user.uid, gid: user.gid, env }
}
