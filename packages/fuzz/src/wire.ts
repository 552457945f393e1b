import net from 'node:net'

/**
 * One request exactly as it goes on the wire. Header values and the request target are byte
 * strings (`latin1`: one character per byte), so a mutation can put any byte there, invalid
 * UTF-8 included, which fetch and undici would refuse to send.
 */
export interface WireRequest {
  method: string
  /** The request-target, sent as is (percent-encoded or not). */
  target: string
  /** In order, duplicates allowed. `Host`, `Content-Length` and `Connection` are added unless given. */
  headers: Array<[string, string]>
  body?: Buffer
  /** The Host header: a value, or null to send none. */
  host?: string | null
  /** Send the body with `Transfer-Encoding: chunked` instead of `Content-Length`. */
  chunked?: boolean
}

export interface WireResponse {
  status: number
  headers: Record<string, string>
  /** The raw `name: value` lines, for a failure report. */
  rawHeaders: string[]
  body: Buffer
}

/** What went wrong on the connection itself (no answer, a reset, a hang). */
export interface WireFailure {
  kind: 'reset' | 'timeout' | 'closed-without-answer' | 'unparsable-answer' | 'refused'
  detail: string
  /** What arrived before the failure, if anything. */
  partial?: WireResponse
}

export type WireOutcome = { ok: true; response: WireResponse } | { ok: false; failure: WireFailure }

export function serialize(req: WireRequest, defaultHost: string): Buffer {
  const lines = [`${req.method} ${req.target} HTTP/1.1`]
  const has = (name: string) => req.headers.some(([n]) => n.toLowerCase() === name)
  if (req.host !== null && !has('host')) lines.push(`Host: ${req.host ?? defaultHost}`)
  for (const [name, value] of req.headers) lines.push(`${name}: ${value}`)
  const body = req.body
  if (body && req.chunked && !has('transfer-encoding')) lines.push('Transfer-Encoding: chunked')
  else if (body && !has('content-length')) lines.push(`Content-Length: ${body.length}`)
  if (!has('connection')) lines.push('Connection: close')
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1')
  if (!body) return head
  if (!req.chunked) return Buffer.concat([head, body])
  const parts: Buffer[] = [head]
  const CHUNK = 64 * 1024
  for (let at = 0; at < body.length; at += CHUNK) {
    const piece = body.subarray(at, at + CHUNK)
    parts.push(Buffer.from(`${piece.length.toString(16)}\r\n`, 'latin1'), piece, Buffer.from('\r\n'))
  }
  parts.push(Buffer.from('0\r\n\r\n'))
  return Buffer.concat(parts)
}

/**
 * Sends one request on a connection of its own (`Connection: close`), from `localAddress`
 * (any 127.x.y.z: each fuzz run can look like a client of its own to per-address limits), and
 * reads until the server closes. A reset, a close before a whole answer, or no answer within
 * `timeoutMs` is a failure: the suite asserts a server never does that to a client that sent a
 * well-formed HTTP message.
 */
export function send(
  port: number,
  req: WireRequest,
  options: { timeoutMs: number; localAddress?: string },
): Promise<WireOutcome> {
  const bytes = serialize(req, `127.0.0.1:${port}`)
  const head = req.method === 'HEAD'
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let settled = false
    const socket = net.connect({ port, host: '127.0.0.1', localAddress: options.localAddress })
    const finish = (outcome: WireOutcome) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(outcome)
    }
    const timer = setTimeout(() => {
      const partial = parseResponse(Buffer.concat(chunks), head)
      finish({
        ok: false,
        failure: {
          kind: 'timeout',
          detail: `no complete answer within ${options.timeoutMs} ms`,
          ...(partial.response ? { partial: partial.response } : {}),
        },
      })
    }, options.timeoutMs)
    socket.on('connect', () => {
      socket.write(bytes)
    })
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      const got = parseResponse(Buffer.concat(chunks), head)
      const kind = err.code === 'ECONNREFUSED' ? 'refused' : 'reset'
      finish({
        ok: false,
        failure: {
          kind,
          detail: `${err.code ?? ''} ${err.message}`.trim(),
          ...(got.response ? { partial: got.response } : {}),
        },
      })
    })
    socket.on('end', () => {
      const got = parseResponse(Buffer.concat(chunks), head)
      if (got.response && got.complete) finish({ ok: true, response: got.response })
      else if (chunks.length === 0)
        finish({
          ok: false,
          failure: { kind: 'closed-without-answer', detail: 'the server closed without a byte' },
        })
      else
        finish({
          ok: false,
          failure: {
            kind: got.response ? 'closed-without-answer' : 'unparsable-answer',
            detail: got.response
              ? 'the server closed before the whole answer'
              : `not an HTTP answer: ${JSON.stringify(Buffer.concat(chunks).subarray(0, 200).toString('latin1'))}`,
            ...(got.response ? { partial: got.response } : {}),
          },
        })
    })
  })
}

/** Parses an HTTP/1.1 answer read up to the server's close: Content-Length, chunked, or until the end. */
export function parseResponse(raw: Buffer, head: boolean): { response?: WireResponse; complete: boolean } {
  // Interim answers (100 Continue) come before the real one.
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 16).toString('latin1'))) {
    const interim = raw.indexOf('\r\n\r\n')
    if (interim < 0) return { complete: false }
    raw = raw.subarray(interim + 4)
  }
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) return { complete: false }
  const lines = raw.subarray(0, end).toString('latin1').split('\r\n')
  const statusLine = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')
  if (!statusLine) return { complete: false }
  const status = Number(statusLine[1])
  const headers: Record<string, string> = {}
  const rawHeaders = lines.slice(1)
  for (const line of rawHeaders) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value
  }
  const rest = raw.subarray(end + 4)
  const noBody = head || status === 204 || status === 304 || (status >= 100 && status < 200)
  if (noBody) return { response: { status, headers, rawHeaders, body: Buffer.alloc(0) }, complete: true }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const body = dechunk(rest)
    return {
      response: { status, headers, rawHeaders, body: body?.body ?? rest },
      complete: body?.complete ?? false,
    }
  }
  if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    return {
      response: { status, headers, rawHeaders, body: rest.subarray(0, length) },
      complete: rest.length >= length,
    }
  }
  return { response: { status, headers, rawHeaders, body: rest }, complete: true }
}

function dechunk(raw: Buffer): { body: Buffer; complete: boolean } | undefined {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const lineEnd = raw.indexOf('\r\n', at)
    if (lineEnd < 0) return { body: Buffer.concat(parts), complete: false }
    const size = parseInt(raw.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '', 16)
    if (Number.isNaN(size)) return undefined
    if (size === 0) return { body: Buffer.concat(parts), complete: true }
    const start = lineEnd + 2
    if (raw.length < start + size) return { body: Buffer.concat(parts), complete: false }
    parts.push(raw.subarray(start, start + size))
    at = start + size + 2
  }
}
