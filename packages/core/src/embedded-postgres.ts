import { mkdirSync } from 'node:fs'
import net from 'node:net'
import { PGlite } from '@electric-sql/pglite'

export interface EmbeddedPostgres {
  /** postgresql:// URL of the loopback socket server. */
  url: string
  port: number
  stop(): Promise<void>
}

/**
 * An embedded Postgres for machines with no database server: PGlite (Postgres compiled to WASM)
 * behind a small wire-protocol server on a loopback port. For development and tests, never for
 * production.
 *
 * PGlite is ONE session, so many clients must take turns. A client holds the session from its
 * first message until Postgres reports it idle again (ReadyForQuery 'I'): a whole extended-protocol
 * exchange (Parse/Bind/Execute … Sync) and a whole transaction run without another client's
 * messages in between. (pglite-socket's multiplexer interleaves single messages, so two pools
 * using unnamed statements break each other's portals; this server does not.) Session settings a
 * client changes with plain SET stay visible to the others: use SET LOCAL inside a transaction.
 */
export async function startEmbeddedPostgres(options: {
  /** Directory for the data; omit for an in-memory database. */
  dataDir?: string
  port?: number
  host?: string
}): Promise<EmbeddedPostgres> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true })
  const db = await PGlite.create(options.dataDir)
  const host = options.host ?? '127.0.0.1'
  const session = new SessionTurns()
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    serveConnection(db, session, socket)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, resolve)
  })
  const port = (server.address() as net.AddressInfo).port
  let stopped = false
  return {
    url: `postgresql://postgres:postgres@${host}:${port}/postgres`,
    port,
    async stop() {
      if (stopped) return
      stopped = true
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await session.idle()
      await db.close()
    },
  }
}

/** Whose turn it is on the one PGlite session; the others wait in order. */
class SessionTurns {
  private owner: object | null = null
  private readonly waiting: Array<{ who: object; go: () => void }> = []

  async take(who: object): Promise<void> {
    if (this.owner === who) return
    if (this.owner === null) {
      this.owner = who
      return
    }
    await new Promise<void>((go) => this.waiting.push({ who, go }))
  }

  give(who: object): void {
    if (this.owner !== who) return
    const next = this.waiting.shift()
    this.owner = next?.who ?? null
    next?.go()
  }

  holds(who: object): boolean {
    return this.owner === who
  }

  /** Resolves once nobody holds the session (for a clean stop). */
  async idle(): Promise<void> {
    while (this.owner !== null) await new Promise((r) => setTimeout(r, 10))
  }
}

const SSL_REQUEST = 80877103
const CANCEL_REQUEST = 80877102
const GSSENC_REQUEST = 80877104

function serveConnection(db: PGlite, session: SessionTurns, socket: net.Socket): void {
  const me = {}
  let buffer = Buffer.alloc(0)
  let started = false
  let closed = false
  /** The last 6 bytes PGlite sent: after a Sync or Query they are ReadyForQuery ('Z', len 5, status). */
  let tail = Buffer.alloc(0)
  let work = Promise.resolve()

  const run = async (message: Buffer, endsExchange: boolean): Promise<void> => {
    await session.take(me)
    if (closed) {
      await release()
      return
    }
    tail = Buffer.alloc(0)
    try {
      await db.runExclusive(() =>
        db.execProtocolRawStream(new Uint8Array(message), {
          onRawData: (chunk: Uint8Array) => {
            if (chunk.length === 0) return
            const bytes = Buffer.from(chunk)
            tail = Buffer.concat([tail, bytes]).subarray(-6)
            if (!closed && socket.writable) socket.write(bytes)
          },
        }),
      )
    } catch (err) {
      socket.destroy(err as Error)
      await release()
      return
    }
    // Hand the session on only when Postgres is idle: not inside a transaction ('T') or a failed
    // one ('E'), and not between the messages of an extended-protocol exchange.
    if (endsExchange && tail.length === 6 && tail[0] === 0x5a && tail[5] === 0x49) session.give(me)
  }

  /** A client gone mid-transaction must not leave the shared session inside it. */
  const release = async (): Promise<void> => {
    if (!session.holds(me)) return
    try {
      if (db.isInTransaction()) await db.exec('ROLLBACK')
    } catch {
      // the session is reset by the next client's statements either way
    }
    session.give(me)
  }

  const onData = (data: Buffer): void => {
    buffer = Buffer.concat([buffer, data])
    for (;;) {
      if (!started) {
        if (buffer.length < 8) return
        const length = buffer.readInt32BE(0)
        if (buffer.length < length) return
        const code = buffer.readInt32BE(4)
        const message = buffer.subarray(0, length)
        buffer = buffer.subarray(length)
        if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
          socket.write('N')
          continue
        }
        if (code === CANCEL_REQUEST) {
          socket.end()
          return
        }
        started = true
        work = work.then(() => run(message, true))
        continue
      }
      if (buffer.length < 5) return
      const type = buffer[0]!
      const length = buffer.readInt32BE(1) + 1
      if (buffer.length < length) return
      const message = buffer.subarray(0, length)
      buffer = buffer.subarray(length)
      if (type === 0x58 /* X: Terminate */) {
        socket.end()
        return
      }
      // Q (simple query) and S (Sync) end an exchange; everything else continues one.
      const endsExchange = type === 0x51 || type === 0x53
      work = work.then(() => run(message, endsExchange))
    }
  }

  socket.setNoDelay(true)
  socket.on('data', onData)
  socket.on('error', () => socket.destroy())
  socket.on('close', () => {
    closed = true
    work = work.then(release)
  })
}
