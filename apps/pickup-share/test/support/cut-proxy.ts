import net from 'node:net'

/**
 * A TCP hop the test controls, between a download client and the app: it forwards the request,
 * forwards the response's headers and its first `cutAfter` body bytes, then closes the client's
 * connection and the app's — a connection that died at a chosen byte, whatever the client is.
 * It reads from the app as fast as the app writes, so the app has handed more to its socket than
 * the client ever gets (what a cut looks like from the server's side on any real network).
 * Only the first connection is cut; later ones (a resume) pass through whole.
 */
export async function startCutProxy(
  target: { host: string; port: number },
  cutAfter: number,
): Promise<{ url: string; cuts: number; close(): Promise<void> }> {
  const state = { cuts: 0 }
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(target.port, target.host)
    sockets.add(client).add(upstream)
    const cut = state.cuts++ === 0
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.end())
    client.pipe(upstream)
    if (!cut) {
      upstream.pipe(client)
      return
    }
    let head = Buffer.alloc(0)
    let bodyLeft: number | null = null
    upstream.on('data', (chunk: Buffer) => {
      if (bodyLeft === null) {
        head = Buffer.concat([head, chunk])
        const end = head.indexOf('\r\n\r\n')
        if (end < 0) return
        bodyLeft = cutAfter
        client.write(head.subarray(0, end + 4))
        chunk = head.subarray(end + 4)
      }
      if (bodyLeft <= 0) return
      const part = chunk.subarray(0, bodyLeft)
      bodyLeft -= part.length
      client.write(part)
      if (bodyLeft === 0) {
        // The client gets what was written, then the end of a connection that broke.
        client.end()
        upstream.destroy()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    get cuts() {
      return state.cuts
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}
