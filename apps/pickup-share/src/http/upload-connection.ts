import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { PassThrough, type Readable } from 'node:stream'
import { onServer } from '@quartet/core/http'
import type { Express } from 'express'

/**
 * How a PUT whose body we stream ourselves (blob and repo uploads) meets the connection, so that a
 * refused upload ends with its answer read by the client, never with a reset (issue 23 item 3):
 *
 * 1. `Expect: 100-continue` is answered by the route, not by node: node sends `100 Continue` as
 *    soon as the headers arrive unless the server listens for 'checkContinue', and then a client
 *    starts sending a body we are about to refuse. Here the route checks the token and the
 *    declared length first and sends `100 Continue` only for an upload it will take.
 * 2. The body reaches the store through a PassThrough, never the request itself: a store that
 *    stops reading (too many bytes, a full disk) destroys what it reads from, and destroying the
 *    request destroys its socket, which resets a client still sending (curl exit 55: no status).
 * 3. A refused upload whose body is still coming is closed the way nginx does it (lingering
 *    close): the answer goes out with `Connection: close`, our side is shut for writing (FIN), and
 *    what the client still sends is read and dropped until it stops — bounded by LINGER_MS and
 *    LINGER_BYTES — so the kernel never answers unread bytes with a reset before the client has
 *    read the status. Clients (curl among them) stop sending once they see a final status.
 */
export const LINGER_MS = 5000
export const LINGER_BYTES = 64 * 1024 * 1024

const CONTINUE_OWED = Symbol('continueOwed')
type Deferrable = IncomingMessage & { [CONTINUE_OWED]?: boolean }

/**
 * Makes every server core makes for the app (main via core's serve, tests via startTestServer)
 * leave `100 Continue` of `isStreamedUpload` requests to the route. Other requests get it at
 * once, as node would send it.
 */
export function deferContinue(app: Express, isStreamedUpload: (req: IncomingMessage) => boolean): void {
  onServer(app, (server) => {
    server.on('checkContinue', (req: Deferrable, res: ServerResponse) => {
      if (isStreamedUpload(req)) req[CONTINUE_OWED] = true
      else res.writeContinue()
      server.emit('request', req, res)
    })
  })
}

/** The upload will be taken: a client waiting for `100 Continue` may send its body now. */
export function acceptBody(req: IncomingMessage, res: ServerResponse): void {
  const r = req as Deferrable
  if (!r[CONTINUE_OWED]) return
  r[CONTINUE_OWED] = false
  res.writeContinue()
}

/**
 * The request body as a stream of its own: the store may destroy it when it stops reading, and
 * the request (with its socket) lives on to carry the answer. A client that goes away mid-body
 * fails the stream.
 */
export function uploadBody(req: IncomingMessage): Readable {
  const body = new PassThrough()
  req.pipe(body)
  req.on('error', (err) => body.destroy(err))
  req.on('close', () => {
    if (!req.complete)
      body.destroy(Object.assign(new Error('the upload was cut off'), { code: 'ECONNRESET' }))
  })
  return body
}

/**
 * After a refusal: unless the whole body has been read, the connection closes after the answer
 * with a lingering close (see above) instead of node's immediate destroy.
 */
export function lingerAfterAnswer(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete) return
  res.setHeader('Connection', 'close')
  const socket = req.socket as Socket & { destroySoon?: () => void }
  // node ends a `Connection: close` answer with socket.destroySoon() (end, then destroy as soon as
  // it is written); this socket lingers instead.
  socket.destroySoon = () => {
    if (socket.destroyed) return
    let dropped = 0
    const close = () => {
      clearTimeout(timer)
      socket.destroy()
    }
    const timer = setTimeout(close, LINGER_MS)
    timer.unref()
    socket.once('close', () => clearTimeout(timer))
    socket.end()
    req.unpipe()
    req.on('data', (chunk: Buffer) => {
      dropped += chunk.length
      if (dropped > LINGER_BYTES) close()
    })
    // The client sent it all, or stopped: nothing left that could meet a closed socket.
    req.once('end', close)
    req.once('close', close)
    req.resume()
  }
}
