import { describe, type Envelope, type Need, type Probe, type Sample } from './load.ts'

function envMs(name: string, fallback: number): number {
  const raw = process.env[name]
  const value = raw ? Number(raw) : NaN
  return Number.isFinite(value) && value > 0 ? value : fallback
}

/** No request may take longer than this, whatever is down (README "Deadlines and outages": about 2 s, plus the answer). */
export const BUDGET_MS = envMs('TEST_FAULTS_BUDGET_MS', 2500)
/** `/readyz` answers within about 1 s (its checks' deadline, plus the answer itself). */
export const READY_BUDGET_MS = envMs('TEST_FAULTS_READY_BUDGET_MS', 1100)
/** After the fault is applied, how long until every request must show it (a query in flight may still finish). */
export const SETTLE_MS = 500
/** After the dependency is back, how long the services may take to use it again. */
export const RECOVERY_MS = 5000

/** Whether an answer is a dependency-outage answer in the service's own envelope; else what is wrong. */
export function unavailableProblem(sample: Sample, envelope: Envelope): string | null {
  if (sample.status === null) return 'no answer'
  if (envelope === 'readiness') return sample.status === 503 ? null : `status ${sample.status}, not 503`
  const body = sample.body as Record<string, unknown> | null
  const error = (body && typeof body === 'object' ? body.error : undefined) as
    Record<string, unknown> | undefined
  const retryAfter = sample.headers['retry-after']
  const problems: string[] = []
  const needStatus = (allowed: number[]) => {
    if (!allowed.includes(sample.status!)) problems.push(`status ${sample.status}, not 503`)
  }
  switch (envelope) {
    case 'key-info':
      needStatus([503])
      if (error?.code !== 503 || typeof error.message !== 'string')
        problems.push('body is not {error:{code:503,message}}')
      break
    case 'plain':
      needStatus([503])
      if (error?.code !== 'service_unavailable')
        problems.push('body is not {error:{code:"service_unavailable"}}')
      break
    case 'dns-rest':
      needStatus([503])
      if (body?.success !== false || error?.code !== 'service_unavailable')
        problems.push('body is not {success:false,error:{code:"service_unavailable"}}')
      break
    case 'dns-rpc': {
      // A JSON-RPC call's error object; the HTTP status may stay 200, as for other errors.
      needStatus([200, 503])
      const data = (error?.data ?? {}) as Record<string, unknown>
      if (data.error_code !== 'service_unavailable')
        problems.push('no JSON-RPC error with data.error_code "service_unavailable"')
      break
    }
    case 'dns-graphql': {
      needStatus([200, 503])
      const errors = (body?.errors ?? []) as Array<{ extensions?: { code?: unknown } }>
      if (!errors.some((e) => e.extensions?.code === 'service_unavailable'))
        problems.push('no GraphQL error with extensions.code "service_unavailable"')
      break
    }
  }
  if (!retryAfter || !/^\d+$/.test(retryAfter) || Number(retryAfter) < 1)
    problems.push(`Retry-After ${retryAfter === undefined ? 'missing' : JSON.stringify(retryAfter)}`)
  return problems.length ? problems.join('; ') : null
}

export interface OutageWindow {
  /**
   * performance.now() when the fault was applied, when undoing it began (a restarted server
   * may answer before it is seen to be up), and when the dependency was back.
   */
  down: number
  restoring: number
  up: number
  /** When the load stopped. */
  end: number
}

type Phase = 'before' | 'during' | 'transition' | 'recovered'

const PHASE_WORDS: Record<Phase, string> = {
  before: 'before the outage',
  during: 'during the outage',
  transition: 'as the outage began or ended',
  recovered: 'after the recovery',
}

export function phaseOf(sample: Sample, w: OutageWindow): Phase {
  if (sample.end <= w.down) return 'before'
  if (sample.start >= w.down + SETTLE_MS && sample.end <= w.restoring) return 'during'
  if (sample.start >= w.up + RECOVERY_MS) return 'recovered'
  return 'transition'
}

/** Problems found, grouped by probe and rule, each with a count and a few examples. */
export class Findings {
  private readonly groups = new Map<string, { count: number; total: number; examples: string[] }>()

  add(key: string, sample: Sample | null, total = 0): void {
    const group = this.groups.get(key) ?? { count: 0, total, examples: [] }
    group.count++
    group.total = Math.max(group.total, total)
    if (sample && group.examples.length < 3) group.examples.push(describe(sample))
    this.groups.set(key, group)
  }

  note(message: string): void {
    this.groups.set(message, { count: 1, total: 0, examples: [] })
  }

  get empty(): boolean {
    return this.groups.size === 0
  }

  /** Fails the test with every finding (a readable list rather than a string diff). */
  assertNone(title: string): void {
    if (!this.empty) throw new Error(`${title}:\n${this.toString()}`)
  }

  toString(): string {
    return [...this.groups]
      .map(([key, g]) => {
        const count = g.total ? ` (${g.count} of ${g.total})` : g.count > 1 ? ` (${g.count})` : ''
        return `- ${key}${count}${g.examples.map((e) => `\n    e.g. ${e}`).join('')}`
      })
      .join('\n')
  }
}

/**
 * Checks one service's samples of one outage of `dependency` against the issue's rules:
 * every answer within the budget and never a transport error; any 5xx a proper 503; while it is
 * out, `required` probes answer 503 + Retry-After in the envelope, `none` probes answer as usual,
 * `optional` either; and once it is back (after RECOVERY_MS), everything answers as usual.
 */
export function checkOutage(
  samples: Sample[],
  probes: Probe[],
  dependency: 'postgres' | 'redis',
  window: OutageWindow,
  findings: Findings,
): void {
  for (const probe of probes) {
    const mine = samples.filter((s) => s.probe === probe.name)
    const need: Need = probe.needs[dependency]
    const budget = probe.envelope === 'readiness' ? READY_BUDGET_MS : BUDGET_MS
    const byPhase = (p: Phase) => mine.filter((s) => phaseOf(s, window) === p)
    const during = byPhase('during')
    const recovered = byPhase('recovered')
    const tag = `${probe.name}`

    for (const s of mine) {
      // Named by phase: slow answers before the fault mean a slow machine, not the fault.
      if (s.ms > budget)
        findings.add(`${tag}: over the ${budget} ms budget ${PHASE_WORDS[phaseOf(s, window)]}`, s)
      if (s.errorCode) findings.add(`${tag}: transport error`, s, mine.length)
      else if (s.status !== null && s.status >= 500 && unavailableProblem(s, probe.envelope))
        findings.add(`${tag}: a 5xx that is not a proper 503 (${unavailableProblem(s, probe.envelope)})`, s)
    }
    for (const s of byPhase('before'))
      if (!s.errorCode && !probe.ok(s)) findings.add(`${tag}: wrong answer before the outage`, s)

    if (during.length < 2)
      findings.add(
        `${tag}: only ${during.length} request(s) were both sent and answered inside the outage`,
        null,
      )
    for (const s of during) {
      if (s.errorCode) continue
      if (need === 'none' && !probe.ok(s))
        findings.add(`${tag}: must keep working while ${dependency} is out`, s, during.length)
      if (need === 'required') {
        const problem = unavailableProblem(s, probe.envelope)
        if (problem)
          findings.add(`${tag}: must be a 503 while ${dependency} is out (${problem})`, s, during.length)
      }
      if (need === 'optional' && !probe.ok(s)) {
        const problem = unavailableProblem(s, probe.envelope)
        if (problem)
          findings.add(`${tag}: neither its usual answer nor a proper 503 (${problem})`, s, during.length)
      }
    }
    for (const s of byPhase('transition')) {
      if (s.errorCode || probe.ok(s)) continue
      if (need === 'none') findings.add(`${tag}: must keep working around the outage`, s)
      else if (unavailableProblem(s, probe.envelope))
        findings.add(`${tag}: neither its usual answer nor a proper 503 around the outage`, s)
    }
    if (recovered.length < 2)
      findings.add(`${tag}: only ${recovered.length} request(s) after the recovery time`, null)
    for (const s of recovered)
      if (!s.errorCode && !probe.ok(s))
        findings.add(
          `${tag}: not recovered ${RECOVERY_MS / 1000} s after ${dependency} was back`,
          s,
          recovered.length,
        )
  }
}

/** How long after SIGTERM is sent a request may still be answered as if it had not been. */
export const SIGNAL_GRACE_MS = 100

/** The shutdown sequence a keep-alive client must see (issue 24, item 5). */
export function checkShutdown(
  samples: Sample[],
  readiness: Probe,
  probes: Probe[],
  signalAt: number,
  exit: { code: number | null; signal: string | null; at: number } | 'timeout',
  shutdownTimeoutMs: number,
  shutdownDelayMs: number,
  findings: Findings,
): void {
  const readinessProbe = readiness.name
  const okOf = new Map([...probes, readiness].map((p) => [p.name, p.ok]))
  // The signal reaches the service's event loop a moment after it is sent: a request that
  // started within that moment may still have been answered as before it.
  const heard = signalAt + SIGNAL_GRACE_MS
  const before = samples.filter((s) => s.end <= signalAt)
  const inflight = samples.filter((s) => s.start < signalAt && s.end > signalAt)
  const early = samples.filter((s) => s.start >= signalAt && s.start < heard)
  const after = samples.filter((s) => s.start >= heard)
  const usual = (s: Sample) =>
    (s.probe === readinessProbe && (s.status === 200 || s.status === 503)) || okOf.get(s.probe)?.(s)
  for (const s of before)
    if (s.errorCode || !okOf.get(s.probe)?.(s)) findings.add('wrong answer before SIGTERM', s, before.length)
  if (before.length < 10) findings.note(`only ${before.length} requests before SIGTERM: the load did not run`)
  for (const s of inflight) {
    // Refused: its connection was still being made when the listener closed; it never arrived.
    if (s.errorCode === 'ECONNREFUSED') continue
    if (s.errorCode || !usual(s))
      findings.add('a request in flight at SIGTERM did not finish as usual', s, inflight.length)
  }
  for (const s of early) {
    if (s.errorCode === 'ECONNREFUSED') continue
    if (s.errorCode) findings.add('connection error after SIGTERM', s)
    else if (!usual(s)) findings.add('a request just after SIGTERM was not served as usual', s)
  }
  const readyAfter = after.filter((s) => s.probe === readinessProbe && !s.errorCode)
  // A readiness request sent just before the signal may be the one that meets the flip: it
  // counts (and, as a balancer would, the load then stops sending, so no later one exists).
  const ready503 = [...inflight, ...early, ...after].filter(
    (s) => s.probe === readinessProbe && s.status === 503,
  )
  if (ready503.length === 0)
    findings.note(
      `no /readyz 503 after SIGTERM (${
        [...inflight, ...early, ...after]
          .filter((s) => s.probe === readinessProbe)
          .map((s) => s.errorCode ?? s.status)
          .slice(0, 3)
          .join(', ') || 'none sent'
      }): readiness must flip to 503 while the server still answers`,
    )
  for (const s of after) {
    if (s.errorCode) {
      // A refused connection is the listener closed: a client retries elsewhere. A reset is not.
      if (s.errorCode !== 'ECONNREFUSED') findings.add('connection error after SIGTERM', s, after.length)
      continue
    }
    if (s.headers.connection?.toLowerCase() !== 'close')
      findings.add('an answer after SIGTERM without Connection: close', s, after.length)
    if (s.probe === readinessProbe) {
      if (s.status !== 503) findings.add('/readyz did not answer 503 after SIGTERM', s, readyAfter.length)
    } else if (!okOf.get(s.probe)?.(s))
      findings.add('a request after SIGTERM was not served as usual', s, after.length)
  }
  if (exit === 'timeout')
    findings.note(`the process had not exited ${shutdownDelayMs + shutdownTimeoutMs + 2000} ms after SIGTERM`)
  else {
    const took = exit.at - signalAt
    if (exit.code !== 0) findings.note(`exit code ${exit.code} (signal ${exit.signal}), not 0`)
    // The delay comes first, then in-flight requests have up to the timeout; 1 s for the exit.
    if (took > shutdownDelayMs + shutdownTimeoutMs + 1000)
      findings.note(
        `exited ${Math.round(took)} ms after SIGTERM (SHUTDOWN_DELAY_MS ${shutdownDelayMs} + SHUTDOWN_TIMEOUT_MS ${shutdownTimeoutMs})`,
      )
  }
}
