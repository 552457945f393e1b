import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RequestHandler } from 'express'
import pino, { type DestinationStream, type Logger } from 'pino'
import { pinoHttp } from 'pino-http'

export type { Logger } from 'pino'

/** Paths never written to a log line: credentials, cookies, passwords, secrets. */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-secret"]',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'password',
  '*.password',
  'secret',
  '*.secret',
  'token',
  '*.token',
]

export function createLogger(options: {
  name: string
  level?: string
  destination?: DestinationStream
}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    // stdout written asynchronously: a synchronous write per request line costs a service a large
    // share of its throughput. pino flushes what is buffered when the process exits.
    options.destination ?? pino.destination({ dest: 1, sync: false }),
  )
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Accept a well-formed incoming X-Request-Id (from the proxy or the client), else make one. */
export function requestIdFor(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id']
  const value = Array.isArray(incoming) ? incoming[0] : incoming
  return value && REQUEST_ID.test(value) ? value : randomUUID()
}

/**
 * pino-http with our request id: `req.id` and `req.log` (a child logger carrying `req_id`) on
 * every request, `X-Request-Id` on every response, and the client address as express resolved it
 * (`req.ip`, after `trust proxy`) on the completion line.
 */
export function httpLogger(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const id = requestIdFor(req)
      res.setHeader('X-Request-Id', id)
      return id
    },
    customAttributeKeys: { reqId: 'req_id' },
    // pino-http only writes `customAttributeKeys.reqId` with quietReqLogger; otherwise the id rides
    // in `req.id`, which the req serializer below drops. Bind it here so every line has `req_id`.
    customProps: (req) => ({
      req_id: (req as IncomingMessage & { id?: unknown }).id,
      // req.ip reads the socket's address; a socket already torn down (client aborted mid-upload)
      // has none and the getter throws, which must not crash the process from a log line.
      ip: (() => {
        try {
          return (req as IncomingMessage & { ip?: string }).ip
        } catch {
          return undefined
        }
      })(),
    }),
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    serializers: {
      // Only what helps to read a request back; credentials appear as "[redacted]" when sent.
      req: (req: { method: string; url: string; headers: Record<string, unknown> }) => ({
        method: req.method,
        url: req.url,
        headers: pick(req.headers, [
          'host',
          'user-agent',
          'authorization',
          'x-api-key',
          'x-api-secret',
          'cookie',
        ]),
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  }) as unknown as RequestHandler
}

function pick(headers: Record<string, unknown>, names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const name of names) if (headers[name] !== undefined) out[name] = headers[name]
  return out
}
