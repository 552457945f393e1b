import net from 'node:net'

/**
 * jest setupFile: tests may only talk to loopback. Any other destination fails loudly, so a test
 * can never depend on (or hit) the outside world.
 */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|::ffff:127\.\d+\.\d+\.\d+)$/i

const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket
net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  const first = args[0]
  const options = (Array.isArray(first) ? first[0] : first) as
    { host?: string; path?: string; port?: unknown } | number
  let host: string | undefined
  if (typeof options === 'object' && options !== null) {
    if (options.path) return connect.apply(this, args)
    host = options.host
  } else if (typeof options === 'number' || typeof options === 'string') {
    host = typeof args[1] === 'string' ? args[1] : undefined
  }
  if (host !== undefined && !LOOPBACK.test(host)) {
    throw new Error(`tests may only connect to loopback, not ${host}`)
  }
  return connect.apply(this, args)
} as typeof net.Socket.prototype.connect
