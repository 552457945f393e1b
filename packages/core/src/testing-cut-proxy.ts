import net from 'node:net'

export interface CutProxy {
  url: string
  /** The request heads that went through, in order (to see what a client asked). */
  requests: string[]
  /** Whether the cut happened. */
  readonly cut: boolean
  close(): Promise<void>
}

/**
 * A TCP hop the test controls, between a download client and the app: it forwards requests and
 * responses as they are, except ONE response — that of the first request whose head matches
 * `cutOn` (default: the first request) — of which it forwards the headers and the first
 * `cutAfter` body bytes, then closes the client's connection and the app's: a connection that
 * died at a chosen byte, whatever the client is. It reads from the app as fast as the app
 * writes, so the app has handed more to its socket than the client ever gets (what a cut looks
 * like from the server's side on any real network). Keep-alive works (HTTP/1.1 without
 * pipelining, as browsers and curl send).
 */
export async function startCutProxy(
  target: { host: string; port: number },
  cutAfter: number,
  cutOn: (requestHead: string) => boolean = () => true,
): Promise<CutProxy> {
  let cutDone = false
  let armedAnywhere = false
  const requests: string[] = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.end())
    let armed = false
    client.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1')
      const head = /^[A-Z]+ [^\r\n]+ HTTP\/1\.[01]\r\n[\s\S]*?\r\n\r\n/.exec(text)
      if (head) {
        requests.push(head[0])
        if (!armedAnywhere && cutOn(head[0])) armed = armedAnywhere = true
      }
      upstream.write(chunk)
    })
    let head = Buffer.alloc(0)
    let bodyLeft: number | null = null
    upstream.on('data', (chunk: Buffer) => {
      if (!armed || cutDone) {
        if (!client.destroyed) client.write(chunk)
        return
      }
      if (bodyLeft === null) {
        head = Buffer.concat([head, chunk])
        const end = head.indexOf('\r\n\r\n')
        if (end < 0) return
        bodyLeft = cutAfter
        client.write(head.subarray(0, end + 4))
        chunk = head.subarray(end + 4)
      }
      const part = chunk.subarray(0, bodyLeft)
      bodyLeft -= part.length
      client.write(part)
      if (bodyLeft === 0) {
        // The client gets what was written, then the end of a connection that broke.
        cutDone = true
        client.end()
        upstream.destroy()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    get cut() {
      return cutDone
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
