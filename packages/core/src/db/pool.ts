import pg from 'pg'

/**
 * The pg pool every app, the migration applier and the readiness probes connect through: a
 * deadline on every connection and query, a timed-out client dropped, and the count of queries
 * sent and answered that readiness reads (db.ts databaseReadiness).
 */

/**
 * How long a request may wait on Postgres before it is answered 503 (errors.ts maps what these
 * throw): a dead or frozen server must not hold a request for longer than about two seconds.
 */
export interface PoolDeadlines {
  /**
   * How long a caller waits for a connection: a free one from the pool, or a new one opening
   * (which is let finish for the next caller even when this one gives up).
   */
  connectTimeoutMs: number
  /**
   * A query's answer: the server cancels the statement after this (`statement_timeout`, which
   * also bounds lock waits), and the client stops waiting shortly after, for a server that
   * cannot even cancel (frozen, partitioned). 0: no deadline (migrations, long operator jobs).
   */
  queryTimeoutMs: number
  /**
   * How long callers wait while the pool has never opened a connection: those are the service's
   * start-up (nothing routes requests to a service that is not listening yet), which on a busy
   * machine should not exit because a first connection took a second and a half. Default:
   * `connectTimeoutMs`; services' pools (databaseOptions) wait as long as a connection may take.
   */
  firstConnectTimeoutMs?: number
}

export const DEFAULT_POOL_DEADLINES: PoolDeadlines = { connectTimeoutMs: 1000, queryTimeoutMs: 1000 }

/**
 * Pool deadlines (db.ts) for the embedded Postgres: it serves one session at a time, so a
 * connection may wait its turn for seconds, and it cannot cancel a statement. The launcher and
 * the test helpers use these when they start it; production's defaults are about a second.
 */
export const EMBEDDED_DEADLINES: PoolDeadlines = { connectTimeoutMs: 30_000, queryTimeoutMs: 0 }

/** The client waits this much longer than the server's statement_timeout, so the server's cancel normally wins. */
const CLIENT_GRACE_MS = 250

/** How long a new connection may take to open once started, whoever asked for it. */
export const ESTABLISH_TIMEOUT_MS = 10_000

/**
 * What a pool's queries tell of the server: each query is numbered as a checked-out client sends
 * it, and `answered` is the highest number the server answered (rows, or an error of its own).
 * A server that answered a query sent after some moment was alive after that moment; a frozen or
 * partitioned one answers nothing sent after it stopped, however late the event loop reads.
 */
export interface QueryProgress {
  sent: number
  answered: number
}

/** Whether a query's outcome came from the server: no error, or an error Postgres sent (a code). */
function answeredByServer(err: unknown): boolean {
  return err === undefined || err === null || err instanceof pg.DatabaseError
}

/**
 * A pg client that drops its connection when a query's client-side deadline passes (pg's
 * `query_timeout`: the server did not even answer the cancel of statement_timeout, so it is
 * frozen or cut off). pg alone keeps the connection, and everything sent after, a transaction's
 * ROLLBACK included, then queues behind the unanswered query and waits out a deadline of its own;
 * dropped, they fail at once and the pool opens a fresh connection.
 *
 * Dropped through pg's public API: `end()`, which with a query still in flight destroys the
 * socket at once rather than saying goodbye to a server that answers nothing, and fails what is
 * sent after it; and the pool's `release(err)`, which destroys a client instead of keeping it
 * (DeadlinePool passes an error for a client that timed out). deadlines.test.ts holds both to a
 * frozen server.
 */
class DeadlineClient extends pg.Client {
  private readonly progress: QueryProgress | undefined

  // pg-pool constructs its clients with the pool's options, where createPgPool put `progress`.
  constructor(config?: pg.ClientConfig & { progress?: QueryProgress }) {
    super(config)
    this.progress = config?.progress
  }

  override query(...args: unknown[]): never {
    // Numbered as it is sent: the client is checked out, so the query goes to the server now.
    const progress = this.progress
    const number = progress ? ++progress.sent : 0
    const settled = (err: unknown) => {
      this.dropIfTimedOut(err)
      if (progress && answeredByServer(err)) progress.answered = Math.max(progress.answered, number)
    }
    const last = args[args.length - 1]
    if (typeof last === 'function') {
      const callback = last as (err: Error | undefined, ...rest: unknown[]) => void
      args[args.length - 1] = (err: Error | undefined, ...rest: unknown[]) => {
        settled(err)
        callback(err, ...rest)
      }
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args)
    if (result instanceof Promise) result.then(() => settled(undefined), settled)
    return result as never
  }

  /** Whether a query's client-side deadline passed: the client is ended, and must not serve again. */
  timedOut = false

  private dropIfTimedOut(err: unknown): void {
    if (this.timedOut || !(err instanceof Error) || err.message !== 'Query read timeout') return
    this.timedOut = true
    this.end().catch(() => {})
  }
}

/** The client's pool release, which destroys it instead of keeping it once a query timed out. */
function dropWhenTimedOut(client: pg.PoolClient): pg.PoolClient {
  const release = client.release.bind(client)
  client.release = (err?: Error | boolean) =>
    release(err || (client instanceof DeadlineClient && client.timedOut ? TIMED_OUT : undefined))
  return client
}
const TIMED_OUT = new Error('a query passed its deadline: the client was ended')

/**
 * A pg pool whose callers wait at most `waitMs` for a connection, while a connection being
 * opened is given ESTABLISH_TIMEOUT_MS to finish whoever gave up on it (it then serves the next
 * caller). pg-pool's own connectionTimeoutMillis is both at once: on a slow or thawing server,
 * every caller's deadline aborted the connection under way and the next caller started another,
 * a storm of half-opened connections that kept a recovered Postgres busy for many seconds.
 */
class DeadlinePool extends pg.Pool {
  /** Until a first connection opens, callers wait `firstWaitMs` (PoolDeadlines.firstConnectTimeoutMs). */
  private connected = false
  /** When a client was last checked out or given back (ms): the pool's latest sign of work. */
  private lastActivity = 0

  constructor(
    config: pg.PoolConfig,
    private readonly waitMs: number,
    private readonly firstWaitMs: number,
  ) {
    super(config)
    this.on('release', () => {
      this.lastActivity = Date.now()
    })
  }

  // pg's connect(): a promise, or a callback as pool.query uses it.
  override connect(): Promise<pg.PoolClient>
  override connect(
    callback: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): void
  override connect(
    callback?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): Promise<pg.PoolClient> | void {
    const acquired = new Promise<pg.PoolClient>((resolve, reject) => {
      let settled = false
      const timer = setTimeout(
        () => {
          settled = true
          reject(new Error('timeout exceeded when trying to connect'))
        },
        this.connected ? this.waitMs : this.firstWaitMs,
      )
      this.lastActivity = Date.now()
      super.connect((err, client, done) => {
        clearTimeout(timer)
        if (!err && client) this.connected = true
        if (settled) {
          // The caller gave up: the connection goes back to the pool for the next one.
          if (!err && client) done()
          return
        }
        settled = true
        if (err || !client) reject(err ?? new Error('pool gave no client'))
        else resolve(dropWhenTimedOut(client))
      })
    })
    if (!callback) return acquired
    acquired.then(
      (client) =>
        callback(undefined, client, (release) => client.release(release as Error | boolean | undefined)),
      (err: Error) => callback(err, undefined, () => {}),
    )
  }

  /**
   * Ends the pool once the work under way is done: at shutdown the server has stopped taking
   * requests, but a request whose client went away keeps running its handler, and a pool ended
   * under it fails its next query ("Cannot use a pool after calling end"), which could leave a
   * write half done. So `end` first waits until no client is checked out and none was taken or
   * given back for DRAIN_QUIET_MS (new queries are still served meanwhile), at most DRAIN_MAX_MS.
   */
  override end(): Promise<void>
  override end(callback: () => void): void
  override end(callback?: () => void): Promise<void> | void {
    const ended = this.drained().then(() => super.end())
    if (!callback) return ended
    ended.then(callback, callback)
  }

  private async drained(): Promise<void> {
    const deadline = Date.now() + DRAIN_MAX_MS
    while (Date.now() < deadline) {
      const busy = this.totalCount > this.idleCount || this.waitingCount > 0
      if (!busy && Date.now() - this.lastActivity >= DRAIN_QUIET_MS) return
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
  }
}

/** How long a pool must have been idle before `end` closes it (see DeadlinePool.end). */
const DRAIN_QUIET_MS = 100
/** The longest `end` waits for work under way (each query has its own deadline too). */
const DRAIN_MAX_MS = 2_000

/**
 * A pg pool with deadlines (PoolDeadlines): the one way every app, the migration applier and
 * the readiness probes connect. Errors of idle clients, and of clients checked out by code that
 * listens for none (a connection dropping under a checked-out client would otherwise be an
 * unhandled 'error' event, which ends the process), are swallowed here: the query under way
 * fails on its own, and the next checkout reconnects.
 */
export function createPgPool(
  url: string,
  options: { max?: number; deadlines?: Partial<PoolDeadlines> } = {},
): pg.Pool {
  const { connectTimeoutMs, queryTimeoutMs, firstConnectTimeoutMs } = {
    ...DEFAULT_POOL_DEADLINES,
    ...options.deadlines,
  }
  const progress: QueryProgress = { sent: 0, answered: 0 }
  const config: pg.PoolConfig & { progress: QueryProgress } = {
    Client: DeadlineClient,
    progress,
    connectionString: url,
    max: options.max ?? 2,
    connectionTimeoutMillis: Math.max(ESTABLISH_TIMEOUT_MS, connectTimeoutMs, firstConnectTimeoutMs ?? 0),
    // Keep-alive probes find a peer that vanished without a FIN (a partition, a killed VM).
    keepAlive: true,
  }
  if (queryTimeoutMs > 0) {
    config.statement_timeout = queryTimeoutMs
    config.query_timeout = queryTimeoutMs + CLIENT_GRACE_MS
  }
  const pool = new DeadlinePool(config, connectTimeoutMs, firstConnectTimeoutMs ?? connectTimeoutMs)
  Object.defineProperty(pool, PROGRESS, { value: progress })
  pool.on('error', () => {})
  pool.on('connect', (client) => client.on('error', () => {}))
  return pool
}

/** Where createPgPool keeps the pool's QueryProgress. */
export const PROGRESS = Symbol.for('quartet.queryProgress')
