import type { IncomingMessage } from 'node:http'
import { assertJsonDepth, assertWellFormedBody, verifyUtf8Body } from '../validate.ts'

/**
 * What express.json reads the same way the hot path does: `application/json` (no parameter but
 * `charset=utf-8`), a Content-Length from 1 to the limit (node's parser then delivers exactly
 * that many bytes), no Transfer-Encoding (a chunked body's size is known only at its end), no
 * Content-Encoding (express.json inflates gzip, deflate and br, and refuses the rest), no
 * Expect. A body over the limit goes to express too, which reads it off and answers the 413.
 */
export function plainJsonBody(req: IncomingMessage, limit: number | undefined): boolean {
  const h = req.headers
  const length = h['content-length']
  if (limit === undefined || length === undefined || !/^[1-9][0-9]{0,15}$/.test(length)) return false
  if (Number(length) > limit) return false
  if (h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined || h.expect !== undefined)
    return false
  const type = h['content-type']
  return type !== undefined && JSON_TYPE.test(type)
}
const JSON_TYPE = /^application\/json[ \t]*(;[ \t]*charset=("?)utf-8\2[ \t]*)?$/i

/**
 * body-parser's reading of a size (bytes.parse, 1024-based units): "1mb", "100kb", "512".
 * Undefined when it is not one, and then no request takes a JSON hot route.
 */
export function parseByteLimit(limit: string | number): number | undefined {
  if (typeof limit === 'number') return Number.isFinite(limit) ? limit : undefined
  const m = /^((-|\+)?(\d+(?:\.\d+)?)) *(kb|mb|gb|tb|pb)$/i.exec(limit)
  const units: Record<string, number> = {
    b: 1,
    kb: 1 << 10,
    mb: 1 << 20,
    gb: 1 << 30,
    tb: 1024 ** 4,
    pb: 1024 ** 5,
  }
  const value = m ? parseFloat(m[1]!) * units[m[4]!.toLowerCase()]! : parseInt(limit, 10)
  return Number.isFinite(value) ? Math.floor(value) : undefined
}

/** The body as it arrived; rejects with body-parser's `request.aborted` when the client left. */
export function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const aborted = () =>
      reject(Object.assign(new Error('request aborted'), { type: 'request.aborted', status: 400 }))
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.once('end', () => {
      req.off('close', onClose)
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
    })
    const onClose = () => {
      if (!req.complete) aborted()
    }
    req.once('close', onClose)
    req.once('error', aborted)
  })
}

/**
 * express.json's reading of a body, step for step: the UTF-8 and depth checks (verifyJsonBody), the
 * decoding (a leading byte order mark dropped, as iconv-lite does), strict mode (an object or an
 * array, nothing else) and JSON.parse, each failure with body-parser's error `type`; then core's
 * input rule on the value (wellFormedInput's check of the body).
 *
 * The bodies read lately are kept by their text (up to `maxEntries` texts of at most `maxText`
 * characters, the least recently used first out): a client that sends the same body again (a poll, a
 * dashboard's batch of reads) gets the value it passed with before, without parsing and checking
 * it again; both are functions of the text alone, and a refused text is never kept. The value is
 * shared by every request with that text, so it is frozen through: a handler reads its body, it
 * does not change it (one that tried would fail loudly, in every test of it).
 */
export class JsonBodies {
  private readonly values = new Map<string, unknown>()

  constructor(
    private readonly maxEntries = 128,
    private readonly maxText = 4096,
  ) {}

  parse(buf: Buffer): unknown {
    verifyUtf8Body(undefined, undefined, buf, 'utf-8')
    let text = buf.toString('utf8')
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1)
    const keep = text.length <= this.maxText
    const kept = keep ? this.values.get(text) : undefined
    if (kept !== undefined) {
      // Most recently used last: the first key is the one to let go.
      this.values.delete(text)
      this.values.set(text, kept)
      return kept
    }
    const first = /^[ \t\n\r]*([^ \t\n\r])/.exec(text)?.[1]
    // As verifyJsonBody does for express.json: no deeper than MAX_JSON_DEPTH, before parsing.
    assertJsonDepth(text)
    let value: unknown
    try {
      if (first !== '{' && first !== '[') throw new SyntaxError('Unexpected token in JSON (strict mode)')
      value = JSON.parse(text)
    } catch (err) {
      throw Object.assign(err as Error, { type: 'entity.parse.failed', status: 400, body: text })
    }
    assertWellFormedBody(value)
    if (keep) {
      deepFreeze(value)
      keptBodies.add(value as object)
      if (this.values.size >= this.maxEntries) this.values.delete(this.values.keys().next().value!)
      this.values.set(text, value)
    }
    return value
  }
}

const keptBodies = new WeakSet<object>()

/**
 * Whether a body is one JsonBodies keeps (frozen through, handed to every request with its
 * text): what a handler works out from it alone, it may keep beside it (a WeakMap).
 */
export function isKeptBody(value: unknown): boolean {
  return typeof value === 'object' && value !== null && keptBodies.has(value)
}

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null) return
  Object.freeze(value)
  for (const item of Object.values(value)) deepFreeze(item)
}

/** Whether a request announces a body (express.json would parse, and may refuse, it). */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}
