/**
 * How the pages read a failed API call: every failure, the network's included, becomes an
 * ApiFailure with the error code of the service's envelope, its message and details, and the
 * seconds `Retry-After` asks for. Each service renders its own envelope (core's
 * `renderCodeEnvelope` and `renderRestEnvelope` in packages/core/src/errors.ts), so the caller
 * names the one its API answers in: `codeEnvelope` (pickup-share) or `restEnvelope`
 * (dns-manager).
 */

/**
 * What an error's `details` may hold. `issues` is core's answer to bad input
 * (packages/core/src/validate.ts: every offending field), the same in every service; the rest is
 * the service's own (dns-manager's `field`, pickup-share's `reason`, …).
 */
export type FailureDetails = { issues?: Array<{ field: string; message: string }> } & Record<string, unknown>

export class ApiFailure extends Error {
  constructor(
    /** The HTTP status; 0 when no answer came (network, cancelled). */
    readonly status: number,
    /** The envelope's error code (`share_not_found`), or `network` / `aborted`, or the status as text. */
    readonly code: string,
    message: string,
    readonly details: FailureDetails = {},
    /** The seconds the answer's `Retry-After` asked to wait, when it gave a number of seconds. */
    readonly retryAfter: number | null = null,
    /** The request id the envelope carries, for support. */
    readonly requestId: string | null = null,
  ) {
    super(message)
  }
}

/** The error an envelope holds, as far as it holds one. */
export interface EnvelopeError {
  code?: unknown
  message?: unknown
  details?: unknown
  requestId?: unknown
}

/** Reads the error out of a parsed JSON body; undefined when the body is not that envelope. */
export type EnvelopeReader = (body: unknown) => EnvelopeError | undefined

const objectOf = (value: unknown): Record<string, unknown> | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined

/** pickup-share (and design-archive): `{error:{code, message, details?, request_id?}}`. */
export const codeEnvelope: EnvelopeReader = (body) => {
  const error = objectOf(objectOf(body)?.error)
  return error && { ...error, requestId: error.request_id }
}

/** dns-manager's REST and back office: `{success:false, error:{code, message, details?}, request_id?}`. */
export const restEnvelope: EnvelopeReader = (body) => {
  const envelope = objectOf(body)
  const error = objectOf(envelope?.error)
  return error && { ...error, requestId: envelope?.request_id }
}

/** `Retry-After` in seconds (an HTTP date is not a wait the pages can show). */
export function retryAfterOf(headers: Headers): number | null {
  const retry = headers.get('retry-after')
  return retry && /^\d+$/.test(retry) ? Number(retry) : null
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined

/**
 * The failure a non-2xx answer stands for, read with the service's envelope reader. Where the
 * body is not JSON, or not that envelope, the status stands for the code and the status text
 * for the message.
 */
export async function failureOf(res: Response, read: EnvelopeReader): Promise<ApiFailure> {
  const retryAfter = retryAfterOf(res.headers)
  let body: unknown
  try {
    body = await res.json()
  } catch {
    return new ApiFailure(
      res.status,
      String(res.status),
      res.statusText || `HTTP ${res.status}`,
      {},
      retryAfter,
    )
  }
  const error = read(body)
  return new ApiFailure(
    res.status,
    text(error?.code) ?? String(res.status),
    text(error?.message) ?? res.statusText,
    (objectOf(error?.details) as FailureDetails | undefined) ?? {},
    retryAfter,
    text(error?.requestId) ?? null,
  )
}

/** The failure of a request that got no answer at all. */
export const networkFailure = () => new ApiFailure(0, 'network', 'network error')

/**
 * `fetch` for the pages' JSON API: same-origin credentials, the body as JSON, and any failure
 * thrown as an ApiFailure (a network failure as `network`, a non-2xx answer read with `read`).
 */
export async function sendJson(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; read: EnvelopeReader },
): Promise<Response> {
  const headers: Record<string, string> = { ...options.headers }
  if (options.body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    })
  } catch {
    throw networkFailure()
  }
  if (!res.ok) throw await failureOf(res, options.read)
  return res
}
