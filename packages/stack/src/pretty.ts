/**
 * `pnpm start` in a terminal: one short, coloured line per log event of a service instead of
 * its JSON line. The services always log JSON (in containers, to files, to a collector); only
 * the launcher, and only when its stdout is a TTY (and NO_COLOR / QUARTET_LOG_FORMAT=json do
 * not say otherwise), turns lines into this form.
 */

const COLOURS = { red: 31, yellow: 33, green: 32, cyan: 36, grey: 90, magenta: 35 } as const
type Colour = keyof typeof COLOURS

const LEVEL_COLOUR: Record<string, Colour> = {
  trace: 'grey',
  debug: 'grey',
  info: 'green',
  warn: 'yellow',
  error: 'red',
  fatal: 'magenta',
}

/** Fields every line has, or that the short form already shows. */
const SHOWN = new Set([
  'level',
  'time',
  'pid',
  'hostname',
  'name',
  'msg',
  'req',
  'res',
  'responseTime',
  'req_id',
  'ip',
])

export interface PrettyOptions {
  colour: boolean
}

/** Whether the launcher should print the short form: a TTY, and nothing asking for JSON or no colour. */
export function prettyWanted(stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): PrettyOptions | null {
  if (env.QUARTET_LOG_FORMAT === 'json') return null
  if (!stdout.isTTY && env.QUARTET_LOG_FORMAT !== 'pretty') return null
  return { colour: !env.NO_COLOR && !!stdout.isTTY }
}

/**
 * One log line of a service in the short form, `12:03:04 key-info INFO  GET /api/v1/key 200 3 ms`;
 * a line that is not a JSON log event (a stack trace, a tool's output) is passed through as is.
 */
export function prettyLine(service: string, line: string, options: PrettyOptions): string {
  let event: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(line)
    if (typeof parsed !== 'object' || parsed === null || !('msg' in parsed)) return `${service} ${line}`
    event = parsed as Record<string, unknown>
  } catch {
    return `${service} ${line}`
  }
  const paint = (c: Colour, s: string) => (options.colour ? `\x1b[${COLOURS[c]}m${s}\x1b[0m` : s)
  const level = String(event.level ?? 'info')
  const time = typeof event.time === 'string' ? event.time.slice(11, 19) : ''
  const head = `${paint('grey', time)} ${paint('cyan', service)} ${paint(LEVEL_COLOUR[level] ?? 'green', level.toUpperCase().padEnd(5))}`
  const req = event.req as { method?: string; url?: string } | undefined
  const res = event.res as { statusCode?: number } | undefined
  let body: string
  if (req?.method && res?.statusCode !== undefined) {
    const status = res.statusCode
    const statusColour: Colour = status >= 500 ? 'red' : status >= 400 ? 'yellow' : 'green'
    body = `${req.method} ${req.url ?? ''} ${paint(statusColour, String(status))} ${event.responseTime ?? '?'} ms`
    if (event.msg !== 'request completed') body += ` (${String(event.msg)})`
  } else body = String(event.msg)
  const rest = Object.entries(event)
    .filter(([k]) => !SHOWN.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
  const err = event.err as { message?: string; stack?: string } | undefined
  const tail = rest.filter((r) => !r.startsWith('err=')).join(' ')
  return [head, body, tail && paint('grey', tail), err?.message && paint('red', `— ${err.message}`)]
    .filter(Boolean)
    .join(' ')
}
