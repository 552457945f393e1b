import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import net from 'node:net'
import { once } from 'node:events'

const MB = 1024 * 1024

/**
 * Writes `size` deterministic pseudo-random bytes to `file` one megabyte at a time (never the
 * whole file in memory) and returns their sha256.
 */
export async function writeGeneratedFile(file: string, size: number, seed = 1): Promise<string> {
  const hash = createHash('sha256')
  const out = createWriteStream(file)
  const block = createHash('sha512').update(String(seed)).digest()
  const chunk = Buffer.alloc(MB)
  for (let i = 0; i < chunk.length; i += block.length) block.copy(chunk, i)
  for (let written = 0, n = 0; written < size; n++) {
    // Every megabyte differs (its number in its first bytes), so a misplaced one changes the hash.
    chunk.writeUInt32BE(n, 0)
    chunk.writeUInt32BE(seed, 4)
    const piece = chunk.subarray(0, Math.min(MB, size - written))
    hash.update(piece)
    if (!out.write(piece)) await once(out, 'drain')
    written += piece.length
  }
  out.end()
  await once(out, 'finish')
  return hash.digest('hex')
}

/**
 * A TCP proxy between a client and the app: counts the bytes the client sends, can cut every
 * connection once that count crosses a mark (a dropped Wi-Fi, a closed laptop), and can be
 * pointed at another replica between connections.
 */
export class CuttingProxy {
  private server: net.Server
  private sockets = new Set<net.Socket>()
  upstreamBytes = 0
  private cutAt: number | null = null
  cuts = 0
  url = ''
  /** Client-to-server bytes per second (a slow uplink), or unlimited. */
  bytesPerSecond: number | null = null
  private paceStart = 0
  private paceBytes = 0

  constructor(public target: { host: string; port: number }) {
    this.server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host)
      this.sockets.add(client).add(upstream)
      const drop = () => {
        client.destroy()
        upstream.destroy()
        this.sockets.delete(client)
        this.sockets.delete(upstream)
      }
      client.on('data', (data: Buffer) => {
        this.upstreamBytes += data.length
        if (!upstream.write(data)) client.pause()
        else if (this.bytesPerSecond) {
          const now = Date.now()
          if (now - this.paceStart > 1000) {
            this.paceStart = now
            this.paceBytes = 0
          }
          this.paceBytes += data.length
          const ahead = (this.paceBytes / this.bytesPerSecond) * 1000 - (now - this.paceStart)
          if (ahead > 5) {
            client.pause()
            setTimeout(() => client.resume(), ahead)
          }
        }
        if (this.cutAt !== null && this.upstreamBytes >= this.cutAt) {
          this.cutAt = null
          this.cuts++
          this.cutAll()
        }
      })
      upstream.on('drain', () => client.resume())
      upstream.on('data', (data: Buffer) => {
        if (!client.write(data)) upstream.pause()
      })
      client.on('drain', () => upstream.resume())
      client.on('end', () => upstream.end())
      upstream.on('end', () => client.end())
      client.on('error', drop)
      upstream.on('error', drop)
      client.on('close', drop)
      upstream.on('close', drop)
    })
  }

  async start(): Promise<this> {
    this.server.listen(0, '127.0.0.1')
    await once(this.server, 'listening')
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`
    return this
  }

  /** Cuts every open connection once the client has sent `bytes` more. */
  cutAfter(bytes: number): void {
    this.cutAt = this.upstreamBytes + bytes
  }

  cutAll(): void {
    for (const s of this.sockets) s.destroy()
    this.sockets.clear()
  }

  async close(): Promise<void> {
    this.cutAll()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

export const targetOf = (url: string) => {
  const u = new URL(url)
  return { host: u.hostname, port: Number(u.port) }
}
