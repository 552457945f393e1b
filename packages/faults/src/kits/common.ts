import { randomBytes } from 'node:crypto'
import type { Pool } from 'undici'
import { type Need, type Probe, type RequestSpec, type Sample, send } from '../load.ts'
import type { ServiceName, ServiceProcess } from '../service-process.ts'

/**
 * A service under test: the trickle it gets during outages (its readiness probe included),
 * a burst of concurrent writes for kill -9, and the invariants that must hold afterwards.
 */
export interface Kit {
  name: ServiceName
  service: ServiceProcess
  probes: Probe[]
  /** Concurrent writes until stopped (kill -9 scenario); absent for a service without client writes. */
  writeBurst?(pool: Pool): WriteBurst
  /** Problems with the stored data: acknowledged writes missing, counters that disagree with rows. */
  invariants(): Promise<string[]>
}

export interface WriteBurst {
  /** Stops issuing writes and waits for those in flight. */
  stop(): Promise<void>
  /** How many writes were acknowledged so far. */
  acknowledged(): number
}

/** Unique across runs and processes: ids of events, record contents, labels. */
export const RUN_ID = randomBytes(4).toString('hex')
let counter = 0
export const uniqueId = (prefix: string) => `${prefix}-${RUN_ID}-${++counter}`

export const json = (body: unknown) => JSON.stringify(body)

export function readinessProbe(needs: { postgres: Need; redis: Need }, everyMs = 250): Probe {
  return {
    name: 'GET /readyz',
    everyMs,
    next: () => ({ method: 'GET', path: '/readyz' }),
    ok: (s) => s.status === 200,
    needs,
    envelope: 'readiness',
  }
}

/**
 * `loops` concurrent loops, each sending the request `next()` gives as soon as the last one is
 * answered, until stopped: writes as fast as the service takes them, to be cut by a kill.
 */
export function burst(
  pool: Pool,
  service: ServiceName,
  name: string,
  loops: number,
  next: () => RequestSpec | Promise<RequestSpec>,
  onSample: (sample: Sample) => boolean,
): WriteBurst {
  let running = true
  let acked = 0
  const runs = Array.from({ length: loops }, async () => {
    while (running) {
      const sample = await send(pool, service, name, await next())
      if (onSample(sample)) acked++
      // A refused connection (the service is down) is not worth hammering.
      if (sample.errorCode) await new Promise((r) => setTimeout(r, 50))
    }
  })
  return {
    async stop() {
      running = false
      await Promise.all(runs)
    },
    acknowledged: () => acked,
  }
}

/** A plain JSON request for seeding and checks (fetch, outside the measured load). */
export async function call<T = Record<string, unknown>>(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: body as T, headers: res.headers }
}
