import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'

export interface EmbeddedPostgres {
  /** postgresql:// URL of the loopback socket server. */
  url: string
  port: number
  stop(): Promise<void>
}

/**
 * An embedded Postgres for machines with no database server: PGlite (Postgres compiled to WASM)
 * behind pglite-socket, which speaks the wire protocol on a loopback port. PGlite is one session;
 * the socket server multiplexes clients and keeps a transaction's statements together, so pools and
 * transactions work, serialised. For development and tests, never for production.
 */
export async function startEmbeddedPostgres(options: {
  /** Directory for the data; omit for an in-memory database. */
  dataDir?: string
  port?: number
  host?: string
  maxConnections?: number
}): Promise<EmbeddedPostgres> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true })
  const db = await PGlite.create(options.dataDir)
  const host = options.host ?? '127.0.0.1'
  const server = new PGLiteSocketServer({
    db,
    host,
    port: options.port ?? 0,
    maxConnections: options.maxConnections ?? 200,
  })
  await server.start()
  const port = (server as unknown as { port: number }).port
  let stopped = false
  return {
    url: `postgresql://postgres:postgres@${host}:${port}/postgres`,
    port,
    async stop() {
      if (stopped) return
      stopped = true
      await server.stop()
      await db.close()
    },
  }
}
