import { createServer, type Server, type ServerResponse } from 'node:http'
import net from 'node:net'
import { prebuiltHead, sendLines, sendPrebuilt } from '../src/prebuilt-head.ts'

// Node's own writeHead is the reference: for every request below, the bytes a prebuilt head
// puts on the wire must equal those of writeHead given the same lines, on whichever Node runs
// this (the matrix runs 20 and 24). The Date line is compared as a line, not by its value.

const BODY = '{"hello":"world"}'
const LINES: Array<readonly [string, string]> = [
  ['ETag', '"abc"'],
  ['Cache-Control', 'public, max-age=300'],
  ['Content-Type', 'application/json; charset=utf-8'],
  ['Content-Length', String(BODY.length)],
]
const OK = prebuiltHead(200, LINES)
const NOT_MODIFIED = prebuiltHead(304, LINES.slice(0, 2))

type Way = 'prebuilt' | 'node'
const prebuiltAnswered: boolean[] = []

// A head put together per answer (sendLines): a UTF-8 body, and a 204 with none.
const UTF8_BODY = Buffer.from('{"name":"café ☕"}')
const PER_ANSWER: Record<string, { status: number; lines: Array<[string, string]>; body?: Buffer }> = {
  utf8: {
    status: 201,
    lines: [
      ['X-Request-Id', 'req-2'],
      ['Content-Type', 'application/json; charset=utf-8'],
      ['Content-Length', String(UTF8_BODY.length)],
    ],
    body: UTF8_BODY,
  },
  '204': { status: 204, lines: [['X-Request-Id', 'req-3']] },
}

function answer(way: Way, res: ServerResponse, kind: string): void {
  const perAnswer = PER_ANSWER[kind]
  if (perAnswer) {
    const flat = () => perAnswer.lines.flat()
    if (way === 'prebuilt') {
      const text = perAnswer.lines.map(([name, value]) => `${name}: ${value}\r\n`).join('')
      prebuiltAnswered.push(sendLines(res, perAnswer.status, text, flat, perAnswer.body))
      return
    }
    res.writeHead(perAnswer.status, flat())
    res.end(perAnswer.body)
    return
  }
  const head = kind === '304' ? NOT_MODIFIED : OK
  const body = kind === 'buffer' ? Buffer.from(BODY) : BODY
  if (way === 'prebuilt') {
    prebuiltAnswered.push(sendPrebuilt(res, head, 'req-1', body))
    return
  }
  const lines = kind === '304' ? LINES.slice(0, 2) : LINES
  res.writeHead(head.status, [...lines.flat(), 'X-Request-Id', 'req-1'])
  res.end(body)
}

let server: Server
let port: number
beforeAll(async () => {
  server = createServer((req, res) => {
    const [, way, kind] = (req.url ?? '').split('/')
    if (req.headers['x-set-first']) res.setHeader('Connection', 'close')
    answer(way as Way, res, kind ?? 'string')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as net.AddressInfo).port
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
beforeEach(() => {
  prebuiltAnswered.length = 0
  server.keepAliveTimeout = 5000
  server.maxRequestsPerSocket = 0
})

/**
 * Sends each request on one connection, one after the other, and returns each response's bytes
 * as text (the Date line's value blanked), and whether the server then closed the connection.
 */
async function exchange(requests: string[]): Promise<{ responses: string[]; closed: boolean }> {
  const socket = net.connect(port, '127.0.0.1')
  let buffered = ''
  let closed = false
  let wake: () => void = () => {}
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    buffered += chunk
    wake()
  })
  socket.on('close', () => {
    closed = true
    wake()
  })
  const responses: string[] = []
  for (const request of requests) {
    socket.write(request)
    const bodyless = request.startsWith('HEAD') || request.includes('/304 ')
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n')
      if (end !== -1) {
        const head = buffered.slice(0, end + 4)
        const length = bodyless ? 0 : Number(/Content-Length: (\d+)/.exec(head)?.[1] ?? 0)
        if (buffered.length >= head.length + length) {
          responses.push(buffered.slice(0, head.length + length).replace(/^Date: .*$/m, 'Date: -'))
          buffered = buffered.slice(head.length + length)
          break
        }
      }
      if (closed) throw new Error(`connection closed after ${JSON.stringify(buffered)}`)
      await new Promise<void>((resolve) => {
        wake = resolve
      })
    }
  }
  // A connection the server closes is closed within a few milliseconds of its last answer.
  await new Promise((resolve) => setTimeout(resolve, 50))
  socket.destroy()
  return { responses, closed }
}

const get = (path: string, extra = '', version = '1.1') =>
  `GET ${path} HTTP/${version}\r\nHost: x\r\n${extra}\r\n`

async function bothWays(requests: (way: Way) => string[]) {
  const node = await exchange(requests('node'))
  const prebuilt = await exchange(requests('prebuilt'))
  return { node, prebuilt }
}

describe('sendPrebuilt', () => {
  it.each([
    ['a 200 with a string body', (way: Way) => [get(`/${way}/string`)]],
    ['a 200 with a Buffer body', (way: Way) => [get(`/${way}/buffer`)]],
    ['a 304', (way: Way) => [get(`/${way}/304`)]],
    ['a HEAD', (way: Way) => [`HEAD /${way}/string HTTP/1.1\r\nHost: x\r\n\r\n`]],
    ['three answers on one kept-alive connection', (way: Way) => [1, 2, 3].map(() => get(`/${way}/string`))],
    ['a head made per answer, with a UTF-8 body', (way: Way) => [get(`/${way}/utf8`)]],
    ['a head made per answer, a 204', (way: Way) => [get(`/${way}/204`), get(`/${way}/utf8`)]],
  ])(
    'when %s is answered, then the bytes are writeHead’s and the connection stays open',
    async (_, requests) => {
      const { node, prebuilt } = await bothWays(requests)
      expect(prebuilt.responses).toEqual(node.responses)
      expect(prebuilt.responses[0]).toMatch(
        /\r\nDate: -\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n/,
      )
      expect(prebuilt.closed).toBe(false)
      expect(prebuiltAnswered.every(Boolean)).toBe(true)
      expect(prebuiltAnswered).toHaveLength(requests('prebuilt').length)
    },
  )

  it('when the string body is sent, then the head and the body leave in one write', async () => {
    const writes: unknown[] = []
    const probe = createServer((_req, res) => {
      const socket = res.socket as net.Socket
      const write = socket.write.bind(socket)
      socket.write = ((chunk: unknown, ...rest: never[]) => {
        writes.push(chunk)
        return write(chunk as string, ...rest)
      }) as typeof socket.write
      sendPrebuilt(res, OK, 'req-1', BODY)
    })
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
    const res = await fetch(`http://127.0.0.1:${(probe.address() as net.AddressInfo).port}/`)
    expect(await res.text()).toBe(BODY)
    await new Promise<void>((resolve) => probe.close(() => resolve()))
    expect(writes).toHaveLength(1)
    expect(String(writes[0])).toMatch(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"hello":"world"\}$/)
  })

  it.each([
    ['an HTTP/1.0 request', (way: Way) => [get(`/${way}/string`, '', '1.0')]],
    ['a request that asks to close', (way: Way) => [get(`/${way}/string`, 'Connection: close\r\n')]],
    [
      'a response that already has a header (a draining server’s Connection: close)',
      (way: Way) => [get(`/${way}/string`, 'X-Set-First: 1\r\n')],
    ],
  ])('when %s is answered, then writeHead answers it and the connection closes', async (_, requests) => {
    const { node, prebuilt } = await bothWays(requests)
    expect(prebuiltAnswered).toEqual([false])
    expect(prebuilt.responses).toEqual(node.responses)
    expect(prebuilt.closed).toBe(true)
  })

  it('when the server keeps connections without a timeout, then no Keep-Alive line is sent, as node sends none', async () => {
    server.keepAliveTimeout = 0
    const { node, prebuilt } = await bothWays((way) => [get(`/${way}/304`)])
    expect(prebuilt.responses).toEqual(node.responses)
    expect(prebuilt.responses[0]).not.toContain('Keep-Alive')
    expect(prebuiltAnswered).toEqual([true])
  })

  it('when the server limits requests per connection, then Keep-Alive says so and the last one is node’s, which says close', async () => {
    server.maxRequestsPerSocket = 2
    const { node, prebuilt } = await bothWays((way) => [get(`/${way}/string`), get(`/${way}/string`)])
    expect(prebuilt.responses).toEqual(node.responses)
    expect(prebuilt.responses[0]).toContain('Keep-Alive: timeout=5, max=2\r\n')
    expect(prebuiltAnswered).toEqual([true, false])
    expect(prebuilt.responses[1]).toContain('\r\nConnection: close\r\n')
  })
})

describe('prebuiltHead', () => {
  it('when a header line would not pass writeHead, then building the head fails', () => {
    expect(() => prebuiltHead(304, [['ETag', 'a\r\nSet-Cookie: x=1']])).toThrow(/ETag/)
    expect(() => prebuiltHead(304, [['Bad Name', 'x']])).toThrow(/Bad Name/)
  })

  it('when a header is one node writes itself, or a body would have no length, then building the head fails', () => {
    expect(() => prebuiltHead(304, [['Connection', 'close']])).toThrow(/node's to write/)
    expect(() => prebuiltHead(200, [['Date', 'today']])).toThrow(/node's to write/)
    expect(() => prebuiltHead(200, [['ETag', '"a"']])).toThrow(/Content-Length/)
    expect(() => prebuiltHead(299, [])).toThrow(/status/)
  })
})
