import { prettyLine, prettyWanted } from '../src/pretty.ts'

const plain = { colour: false }
const completed = JSON.stringify({
  level: 'info',
  time: '2026-11-24T08:01:02.345Z',
  pid: 1,
  hostname: 'h',
  name: 'key-info',
  req_id: 'abc',
  ip: '127.0.0.1',
  req: { method: 'GET', url: '/api/v1/key', headers: { host: 'keys.localhost' } },
  res: { statusCode: 200 },
  responseTime: 3,
  msg: 'request completed',
})

describe('the launcher’s terminal lines', () => {
  it('when a service logs a request, then one short line: time, service, level, method, path, status, duration', () => {
    expect(prettyLine('key-info', completed, plain)).toBe('08:01:02 key-info INFO  GET /api/v1/key 200 3 ms')
  })

  it('when an event has fields of its own and an error, then they follow the message', () => {
    const line = JSON.stringify({
      level: 'error',
      time: '2026-11-24T08:01:02.345Z',
      msg: 'provider operation failed',
      zone: 'example.org',
      err: { message: 'connect ECONNREFUSED', stack: 'Error: …' },
    })
    expect(prettyLine('dns-manager', line, plain)).toBe(
      '08:01:02 dns-manager ERROR provider operation failed zone=example.org — connect ECONNREFUSED',
    )
  })

  it('when colour is on, then the level and a 5xx status are coloured; a line that is not a log event passes through', () => {
    const failed = completed.replace('"statusCode":200', '"statusCode":503')
    const coloured = prettyLine('key-info', failed, { colour: true })
    expect(coloured).toContain('\x1b[31m503\x1b[0m')
    expect(coloured).toContain('\x1b[32mINFO ')
    expect(prettyLine('stack', '    at Object.<anonymous> (main.js:1:1)', plain)).toBe(
      'stack     at Object.<anonymous> (main.js:1:1)',
    )
  })

  it('when stdout is not a terminal, or JSON is asked for, then the JSON lines are kept', () => {
    expect(prettyWanted({ isTTY: true }, {})).toEqual({ colour: true })
    expect(prettyWanted({ isTTY: true }, { NO_COLOR: '1' })).toEqual({ colour: false })
    expect(prettyWanted({ isTTY: false }, {})).toBeNull()
    expect(prettyWanted({ isTTY: true }, { QUARTET_LOG_FORMAT: 'json' })).toBeNull()
    expect(prettyWanted({ isTTY: false }, { QUARTET_LOG_FORMAT: 'pretty' })).toEqual({ colour: false })
  })
})
