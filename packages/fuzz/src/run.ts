import { writeFileSync } from 'node:fs'
import path from 'node:path'
import type { FaultStack } from '@quartet/faults/stack'
import type { ServiceName } from '@quartet/faults/service-process'
import fc from 'fast-check'
import { type FuzzCase, credentialsOf, extraCases, restCases } from './cases.ts'
import { fetchGraphqlSdl, graphqlCases, graphqlSchema } from './dns-styles/graphql.ts'
import { rpcCases, rpcMethodNames, rpcMethods } from './dns-styles/rpc.ts'
import { describeRequest, toWire } from './draft.ts'
import type { Fixtures } from './fixtures.ts'
import { fetchOperations } from './openapi.ts'
import { acceptedStyles, judge } from './oracle.ts'
import { send, type WireOutcome } from './wire.ts'

/**
 * The suite's streams: each is one fast-check property, run one request at a time, all streams
 * in parallel. dns-manager has one per call style. `share` is the stream's part of the runs.
 */
export const STREAMS: ReadonlyArray<{ name: string; service: ServiceName; share: number }> = [
  { name: 'design-archive', service: 'design-archive', share: 0.1 },
  { name: 'key-info', service: 'key-info', share: 0.25 },
  { name: 'dns-manager', service: 'dns-manager', share: 0.2 },
  { name: 'dns-manager/rpc', service: 'dns-manager', share: 0.1 },
  { name: 'dns-manager/graphql', service: 'dns-manager', share: 0.1 },
  { name: 'pickup-share', service: 'pickup-share', share: 0.25 },
]

export interface FuzzOptions {
  seed: number
  /** Generated requests in all (shrinking a failure sends more). */
  runs: number
  /** Names of the streams to run (STREAMS). */
  streams: readonly string[]
  /** fast-check's path of a counterexample, to replay it (one stream). */
  path?: string
  timeoutMs: number
  /**
   * How long a stream may run, shrinking included, before fast-check stops it. The streams run
   * side by side, so each may use the whole budget: a slow machine makes the run longer, not
   * shorter (a stopped stream sends fewer requests than its runs, which the test fails on).
   */
  timeLimitMs: number
  /** Where the summary goes. */
  logDir: string
  /** Send every run without stopping or shrinking, and list every kind of problem (FUZZ_SURVEY). */
  survey?: boolean
}

export interface ServiceResult {
  stream: string
  service: ServiceName
  runs: number
  sent: number
  statuses: Record<string, number>
  /** Wall time of the stream, and the part of it spent waiting for answers. */
  elapsedMs?: number
  waitingMs?: number
  failure?: string
}

/** The generator of a stream's requests, from its service's running OpenAPI document (and dns-manager's RPC and GraphQL schemas). */
export async function arbitraryFor(
  stream: string,
  stack: FaultStack,
  fixtures: Fixtures,
): Promise<fc.Arbitrary<FuzzCase>> {
  const service = streamNamed(stream).service
  const operations = await fetchOperations(stack.services[service].url)
  if (!operations.length) throw new Error(`${service} documents no operation`)
  const creds = credentialsOf(service, fixtures)
  if (stream === 'dns-manager/rpc') return rpcCases(rpcMethods(operations, rpcMethodNames(operations)), creds)
  if (stream === 'dns-manager/graphql')
    return graphqlCases(graphqlSchema(await fetchGraphqlSdl(stack.services[service].url)), creds)
  const arbs: Array<fc.WeightedArbitrary<FuzzCase>> = operations.map((op) => ({
    arbitrary: restCases(service, op, creds),
    weight: 2,
  }))
  arbs.push({ arbitrary: extraCases(service, creds), weight: 2 })
  return fc.oneof(...arbs)
}

function streamNamed(name: string) {
  const stream = STREAMS.find((s) => s.name === name)
  if (!stream) throw new Error(`no fuzz stream ${name}`)
  return stream
}

/**
 * Sends `runs` generated requests to each service (the services in parallel, each one request
 * at a time) and judges every answer. A failure is shrunk by fast-check to a small request,
 * reported with the seed and path that replay it.
 */
export async function fuzz(
  stack: FaultStack,
  fixtures: Fixtures,
  options: FuzzOptions,
): Promise<ServiceResult[]> {
  const arbs = new Map<string, fc.Arbitrary<FuzzCase>>()
  for (const stream of options.streams) arbs.set(stream, await arbitraryFor(stream, stack, fixtures))
  const shares = options.streams.reduce((sum, name) => sum + streamNamed(name).share, 0)
  const results = await Promise.all(
    options.streams.map(async (stream) => {
      const { service, share } = streamNamed(stream)
      const runs = Math.max(1, Math.round((options.runs * share) / shares))
      const arb = arbs.get(stream)!
      const result: ServiceResult = { stream, service, runs, sent: 0, statuses: {} }
      const started = performance.now()
      const process = stack.services[service]
      /** Sends one case and judges the answer: the problem, or null. */
      const probe = async (c: FuzzCase): Promise<string | null> => {
        const sentAt = performance.now()
        const outcome = await send(process.port, toWire(c.draft), {
          timeoutMs: options.timeoutMs,
          localAddress: c.from,
        })
        result.waitingMs = (result.waitingMs ?? 0) + (performance.now() - sentAt)
        result.sent++
        const key = outcome.ok ? String(outcome.response.status) : outcome.failure.kind
        result.statuses[key] = (result.statuses[key] ?? 0) + 1
        let problem = judge(
          outcome,
          acceptedStyles(service, c.draft.method, c.draft.target ?? c.draft.path, outcome),
          c.draft.method,
        )
        if (!process.running) {
          const exit = await process.exited
          problem = `the ${service} process exited (code ${exit.code}, signal ${exit.signal}) after this request\n${process.tail(30)}`
        }
        return problem ? report(c, outcome, problem) : null
      }
      if (options.survey) {
        // Every problem of every run, grouped by operation and kind, one example each (no shrinking).
        const groups = new Map<string, { count: number; example: string }>()
        // The same cases as a checking run of the same seed, generated one at a time.
        await fc.check(
          fc.asyncProperty(arb, async (c) => {
            if (!process.running) return
            const problem = await probe(c)
            if (!problem) return
            const kind = `${c.operation}: ${problem.split('\n')[0]!.replace(/\d+/g, 'N').slice(0, 120)}`
            const group = groups.get(kind) ?? { count: 0, example: problem }
            group.count++
            groups.set(kind, group)
          }),
          { seed: options.seed, numRuns: runs },
        )
        result.elapsedMs = performance.now() - started
        if (groups.size)
          result.failure = [...groups]
            .map(([kind, g]) => `=== ${stream} ${kind} (${g.count}×)\n${g.example}`)
            .join('\n\n')
        return result
      }
      const property = fc.asyncProperty(arb, async (c) => {
        const problem = await probe(c)
        if (problem) throw new Error(problem)
      })
      const details = await fc.check(property, {
        seed: options.seed,
        numRuns: runs,
        ...(options.path ? { path: options.path } : {}),
        // Shrinking sends requests too: a small request if there is time, the best one so far if not.
        interruptAfterTimeLimit: options.timeLimitMs,
        markInterruptAsFailure: false,
      })
      if (details.failed) {
        const error =
          details.errorInstance instanceof Error
            ? details.errorInstance.message
            : String(details.errorInstance)
        result.failure = [
          `${stream}: ${error}`,
          `replay: FUZZ_SEED=${details.seed} FUZZ_STREAMS=${stream} FUZZ_PATH=${details.counterexamplePath} pnpm --filter @quartet/fuzz test`,
          `(after ${details.numRuns} runs and ${details.numShrinks} shrinks)`,
        ].join('\n')
      }
      result.elapsedMs = performance.now() - started
      return result
    }),
  )
  writeSummary(results, options)
  return results
}

function report(c: FuzzCase, outcome: WireOutcome, problem: string): string {
  const answer = outcome.ok
    ? `answer: ${outcome.response.status}\n${outcome.response.rawHeaders.filter((h) => !/^(content-security-policy|cross-origin|origin-agent|referrer-policy|strict-transport|x-(content-type|dns-prefetch|download|frame|permitted|xss))/i.test(h)).join('\n')}\n\n${outcome.response.body.subarray(0, 500).toString('utf8')}`
    : `answer: ${outcome.failure.kind} (${outcome.failure.detail})`
  return [
    problem,
    `operation: ${c.operation} (${c.auth}, from ${c.from})`,
    `mutations: ${c.mutations.map((m) => m.name).join(' | ') || '(none: the valid request)'}`,
    'request:',
    describeRequest(c.draft),
    answer,
  ].join('\n')
}

function writeSummary(results: ServiceResult[], options: FuzzOptions): void {
  const lines = [`seed ${options.seed}, ${options.runs} runs requested`]
  for (const r of results) {
    const statuses = Object.entries(r.statuses)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([s, n]) => `${s}×${n}`)
      .join(' ')
    const time = `${Math.round((r.elapsedMs ?? 0) / 1000)} s, ${Math.round((r.waitingMs ?? 0) / 1000)} s waiting for answers`
    lines.push(
      `${r.stream}: ${r.sent} requests (${r.runs} runs, ${time}) ${statuses}${r.failure ? ' FAILED' : ''}`,
    )
  }
  writeFileSync(path.join(options.logDir, 'fuzz-summary.txt'), `${lines.join('\n')}\n`)
}

/** FUZZ_STREAMS: stream or service names (a service stands for all its streams); all when unset. */
export function parseStreams(value: string | undefined): string[] {
  if (!value) return STREAMS.map((s) => s.name)
  const out = new Set<string>()
  for (const name of value.split(',').map((s) => s.trim())) {
    const matching = STREAMS.filter((s) => s.name === name || s.service === name)
    if (!matching.length)
      throw new Error(`FUZZ_STREAMS: unknown ${name} (streams: ${STREAMS.map((s) => s.name).join(', ')})`)
    for (const s of matching) out.add(s.name)
  }
  return [...out]
}
