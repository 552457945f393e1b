import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { graphqlSchemaSource } from '@quartet/dns-manager/graphql-schema'
import { operations as dnsRegistry } from '@quartet/dns-manager/operations'
import type { FaultStack } from '@quartet/faults/stack'
import { SERVICE_NAMES, type ServiceName } from '@quartet/faults/service-process'
import fc from 'fast-check'
import { type FuzzCase, credentialsOf, extraCases, restCases } from './cases.ts'
import { graphqlCases, graphqlSchema, rpcCases, rpcMethods } from './dns-styles.ts'
import { describe, toWire } from './draft.ts'
import type { Fixtures } from './fixtures.ts'
import { TOLERATED } from './known.ts'
import { fetchOperations } from './openapi.ts'
import { acceptedStyles, judge } from './oracle.ts'
import { send, type WireOutcome } from './wire.ts'

/** How the runs of one suite are shared among the services (dns-manager has three call styles). */
export const SHARES: Record<ServiceName, number> = {
  'design-archive': 0.1,
  'key-info': 0.25,
  'dns-manager': 0.4,
  'pickup-share': 0.25,
}

export interface FuzzOptions {
  seed: number
  /** Generated requests in all (shrinking a failure sends more). */
  runs: number
  services: readonly ServiceName[]
  /** fast-check's path of a counterexample, to replay it (one service). */
  path?: string
  timeoutMs: number
  /** Where the summary goes. */
  logDir: string
  /** Send every run without stopping or shrinking, and list every kind of problem (FUZZ_SURVEY). */
  survey?: boolean
}

export interface ServiceResult {
  service: ServiceName
  runs: number
  sent: number
  statuses: Record<string, number>
  failure?: string
}

/** The generator of every request for a service, from its running OpenAPI document (and dns-manager's RPC and GraphQL schemas). */
export async function arbitraryFor(
  service: ServiceName,
  stack: FaultStack,
  fixtures: Fixtures,
): Promise<fc.Arbitrary<FuzzCase>> {
  const operations = await fetchOperations(stack.services[service].url)
  if (!operations.length) throw new Error(`${service} documents no operation`)
  const creds = credentialsOf(service, fixtures)
  const arbs: Array<fc.WeightedArbitrary<FuzzCase>> = operations.map((op) => ({
    arbitrary: restCases(service, op, creds),
    weight: 2,
  }))
  arbs.push({ arbitrary: extraCases(service, creds), weight: 2 })
  if (service === 'dns-manager') {
    const names = new Set(dnsRegistry.map((op) => op.name))
    arbs.push({ arbitrary: rpcCases(rpcMethods(operations, names), creds), weight: operations.length })
    arbs.push({
      arbitrary: graphqlCases(graphqlSchema(graphqlSchemaSource(dnsRegistry)), creds),
      weight: operations.length,
    })
  }
  return fc.oneof(...arbs)
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
  const arbs = new Map<ServiceName, fc.Arbitrary<FuzzCase>>()
  for (const service of options.services) arbs.set(service, await arbitraryFor(service, stack, fixtures))
  const results = await Promise.all(
    options.services.map(async (service) => {
      const share = options.services.length === 1 ? 1 : SHARES[service] / sumShares(options.services)
      const runs = Math.max(1, Math.round(options.runs * share))
      const arb = arbs.get(service)!
      const result: ServiceResult = { service, runs, sent: 0, statuses: {} }
      const process = stack.services[service]
      /** Sends one case and judges the answer: the problem, or null. */
      const probe = async (c: FuzzCase): Promise<string | null> => {
        const outcome = await send(process.port, toWire(c.draft), {
          timeoutMs: options.timeoutMs,
          localAddress: c.from,
        })
        result.sent++
        const tolerated = TOLERATED.find((t) => t.matches(service, c.draft, outcome))
        if (tolerated) {
          const key = `tolerated: ${tolerated.why}`
          result.statuses[key] = (result.statuses[key] ?? 0) + 1
          return null
        }
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
        if (groups.size)
          result.failure = [...groups]
            .map(([kind, g]) => `=== ${service} ${kind} (${g.count}×)\n${g.example}`)
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
        // Shrinking sends requests too: enough to get a small request, not to spend the suite's time.
        interruptAfterTimeLimit: Math.max(60_000, runs * 200),
        markInterruptAsFailure: false,
      })
      if (details.failed) {
        const error =
          details.errorInstance instanceof Error
            ? details.errorInstance.message
            : String(details.errorInstance)
        result.failure = [
          `${service}: ${error}`,
          `replay: FUZZ_SEED=${details.seed} FUZZ_SERVICES=${service} FUZZ_PATH=${details.counterexamplePath} pnpm --filter @quartet/fuzz test`,
          `(after ${details.numRuns} runs and ${details.numShrinks} shrinks)`,
        ].join('\n')
      }
      return result
    }),
  )
  writeSummary(results, options)
  return results
}

const sumShares = (services: readonly ServiceName[]) => services.reduce((a, s) => a + SHARES[s], 0)

function report(c: FuzzCase, outcome: WireOutcome, problem: string): string {
  const answer = outcome.ok
    ? `answer: ${outcome.response.status}\n${outcome.response.rawHeaders.filter((h) => !/^(content-security-policy|cross-origin|origin-agent|referrer-policy|strict-transport|x-(content-type|dns-prefetch|download|frame|permitted|xss))/i.test(h)).join('\n')}\n\n${outcome.response.body.subarray(0, 500).toString('utf8')}`
    : `answer: ${outcome.failure.kind} (${outcome.failure.detail})`
  return [
    problem,
    `operation: ${c.operation} (${c.auth}, from ${c.from})`,
    `mutations: ${c.mutations.map((m) => m.name).join(' | ') || '(none: the valid request)'}`,
    'request:',
    describe(c.draft),
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
    lines.push(`${r.service}: ${r.sent} requests (${r.runs} runs) ${statuses}${r.failure ? ' FAILED' : ''}`)
  }
  writeFileSync(path.join(options.logDir, 'fuzz-summary.txt'), `${lines.join('\n')}\n`)
}

export function parseServices(value: string | undefined): ServiceName[] {
  if (!value) return [...SERVICE_NAMES]
  const names = value.split(',').map((s) => s.trim())
  for (const n of names)
    if (!SERVICE_NAMES.includes(n as ServiceName)) throw new Error(`FUZZ_SERVICES: unknown service ${n}`)
  return names as ServiceName[]
}
