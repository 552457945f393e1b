import { createServer } from 'node:net'

/**
 * A loopback port nothing holds now, from the kernel: a fixed port can be taken by anything,
 * down to another program's outgoing connection that was given it as its local port.
 */
export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
