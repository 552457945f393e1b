import { Pool } from 'undici'
import type { ServiceName } from './service-process.ts'

/** One request the load made, as the client saw it. */
export interface Sample {
  service: ServiceName
  probe: string
  /** performance.now() when the request was handed to the client, and when it was over. */
  start: number
  end: number
  ms: number
  /** null when no answer came (the error says why). */
  status: number | null
  headers: Record<string, string>
  /** Parsed JSON, else text (at most 2 kB); for a counted body, its byte count. */
  body: unknown
  bytes: number
  /** A transport failure: `<code>: <message>` (ECONNRESET, UND_ERR_SOCKET, a timeout…). */
  error: string | null
  errorCode: string | null
  /** What the request carried, for the probe's own bookkeeping (event ids, a share code). */
  context: unknown
}

export interface RequestSpec {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  headers?: Record<string, string>
  body?: string | Buffer
  /** Count a successful body's bytes instead of keeping it (downloads). */
  countBody?: boolean
  context?: unknown
}

/**
 * What a probe depends on: `none` = it must keep answering as usual while that dependency is
 * out; `required` = it must answer 503 + Retry-After in the service's envelope; `optional` =
 * either is right (served from a cache while it lasts, a session store that has no fallback).
 */
export type Need = 'none' | 'required' | 'optional'

/** How the service renders a 503: key-info's numeric code, dns-manager's three styles, the others. */
export type Envelope = 'key-info' | 'dns-rest' | 'dns-rpc' | 'dns-graphql' | 'plain' | 'readiness'

export interface Probe {
  name: string
  everyMs: number
  /** The next request, or null to skip this tick (nothing to do yet). */
  next(): RequestSpec | null
  /** The answer when every dependency is up. */
  ok(sample: Sample): boolean
  needs: { postgres: Need; redis: Need }
  envelope: Envelope
  /** Bookkeeping of writes (what was acknowledged), called for every sample. */
  onSample?(sample: Sample): void
}

export interface LoadTarget {
  service: ServiceName
  url: string
  probes: Probe[]
}

/** A request that has not been answered after this long is recorded as hung (and cut). */
export const CLIENT_TIMEOUT_MS = 15_000

/**
 * A steady trickle: every probe fires at its own interval whatever the answers take (so a hang
 * shows as a long request, not as fewer requests), over keep-alive connections (an undici Pool
 * per service), and every request is recorded.
 */
export class TrickleLoad {
  readonly samples: Sample[] = []
  private readonly pools = new Map<ServiceName, Pool>()
  private readonly timers: NodeJS.Timeout[] = []
  private readonly inflight = new Set<Promise<void>>()

  /**
   * `onSample` sees every sample; with `keep: false` they are not kept (a long soak would hold
   * hundreds of thousands).
   */
  constructor(
    private readonly targets: LoadTarget[],
    private readonly options: { keep?: boolean; onSample?: (sample: Sample) => void } = {},
  ) {
    for (const target of targets) {
      this.pools.set(
        target.service,
        new Pool(target.url, {
          headersTimeout: CLIENT_TIMEOUT_MS,
          bodyTimeout: CLIENT_TIMEOUT_MS,
          connectTimeout: CLIENT_TIMEOUT_MS,
        }),
      )
    }
  }

  start(): void {
    for (const target of this.targets) {
      const pool = this.pools.get(target.service)!
      for (const probe of target.probes) {
        const fire = () => {
          const spec = probe.next()
          if (!spec) return
          const done = send(pool, target.service, probe.name, spec).then((sample) => {
            if (this.options.keep ?? true) this.samples.push(sample)
            probe.onSample?.(sample)
            this.options.onSample?.(sample)
          })
          this.inflight.add(done)
          void done.finally(() => this.inflight.delete(done))
        }
        // Spread the probes' first requests over their interval.
        const first = setTimeout(() => {
          fire()
          this.timers.push(setInterval(fire, probe.everyMs))
        }, Math.random() * probe.everyMs)
        this.timers.push(first)
      }
    }
  }

  /** Stops firing and waits for every request still out (each is bounded by the client timeout). */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.length = 0
    await Promise.all([...this.inflight])
  }

  async close(): Promise<void> {
    await this.stop()
    await Promise.all([...this.pools.values()].map((p) => p.close()))
  }
}

/** One request on a dispatcher, recorded whatever happens. */
export async function send(
  dispatcher: Pick<Pool, 'request'>,
  service: ServiceName,
  probe: string,
  spec: RequestSpec,
): Promise<Sample> {
  const start = performance.now()
  const sample: Sample = {
    service,
    probe,
    start,
    end: start,
    ms: 0,
    status: null,
    headers: {},
    body: null,
    bytes: 0,
    error: null,
    errorCode: null,
    context: spec.context,
  }
  try {
    const res = await dispatcher.request({
      method: spec.method,
      path: spec.path,
      headers: spec.headers,
      body: spec.body,
    })
    sample.status = res.statusCode
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined) sample.headers[name] = Array.isArray(value) ? value.join(', ') : value
    }
    // An error answer is parsed whatever the request, so its envelope can be checked.
    if (spec.countBody && res.statusCode < 400) {
      for await (const chunk of res.body) sample.bytes += (chunk as Buffer).length
    } else {
      const text = await res.body.text()
      sample.bytes = Buffer.byteLength(text)
      sample.body = parseBody(text, sample.headers['content-type'])
    }
  } catch (err) {
    const e = err as Error & { code?: string }
    sample.errorCode = e.code ?? e.name
    sample.error = `${e.code ?? e.name}: ${e.message}`
  }
  sample.end = performance.now()
  sample.ms = sample.end - start
  return sample
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (contentType?.includes('json')) {
    try {
      return JSON.parse(text) as unknown
    } catch {
      // fall through: keep the text
    }
  }
  return text.length > 2048 ? `${text.slice(0, 2048)}…` : text
}

/** A short description of an answer, for failure messages. */
export function describe(sample: Sample): string {
  const what = sample.error
    ? sample.error
    : `${sample.status} ${JSON.stringify(sample.body)?.slice(0, 120) ?? ''}`.trim()
  const retry = sample.headers['retry-after'] ? ` Retry-After: ${sample.headers['retry-after']}` : ''
  return `${sample.service} ${sample.probe}: ${what}${retry} in ${Math.round(sample.ms)} ms`
}
