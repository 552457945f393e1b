import { checkOutage, Findings, type OutageWindow, phaseOf, RECOVERY_MS } from './expect.ts'
import type { Kit } from './kits/common.ts'
import { designArchiveKit } from './kits/design-archive.ts'
import { dnsManagerKit } from './kits/dns-manager.ts'
import { keyInfoKit } from './kits/key-info.ts'
import { pickupShareKit } from './kits/pickup-share.ts'
import { type Sample, TrickleLoad } from './load.ts'
import { sleep } from './sandbox.ts'
import type { ServiceName } from './service-process.ts'
import type { FaultStack } from './stack.ts'

const KIT_BUILDERS: Record<ServiceName, (stack: FaultStack) => Promise<Kit>> = {
  'design-archive': designArchiveKit,
  'key-info': keyInfoKit,
  'dns-manager': dnsManagerKit,
  'pickup-share': pickupShareKit,
}

/** Seeds each started service (keys, an account and zone, shares) and returns its kit. */
export async function buildKits(stack: FaultStack): Promise<Kit[]> {
  const kits: Kit[] = []
  for (const name of Object.keys(stack.services) as ServiceName[]) kits.push(await KIT_BUILDERS[name](stack))
  return kits
}

export interface Fault {
  /** Applies the fault (stop, freeze) and resolves when it is in place. */
  apply(): Promise<void> | void
  /** Undoes it and resolves when the dependency answers again. */
  revert(): Promise<void> | void
}

export interface OutageRun {
  window: OutageWindow
  samples: Sample[]
  /** Each service's pid before the run, and whether the same process still ran after it. */
  sameProcess: Record<string, boolean>
}

/** Quiet time before the fault, so that every probe has answered as usual first. */
const BASELINE_MS = 2000
/** Load after the recovery time, so that every probe is seen to work again. */
const TAIL_MS = 2500

/**
 * Every kit's trickle runs; after a baseline the fault is applied for `outageMs`, then undone,
 * and the load goes on for the recovery time and a tail. All four services see the same outage.
 */
export async function outageUnderLoad(kits: Kit[], fault: Fault, outageMs: number): Promise<OutageRun> {
  const pids = Object.fromEntries(kits.map((k) => [k.name, k.service.pid]))
  const load = new TrickleLoad(kits.map((k) => ({ service: k.name, url: k.service.url, probes: k.probes })))
  load.start()
  let window: OutageWindow
  try {
    await sleep(BASELINE_MS)
    const down = performance.now()
    await fault.apply()
    await sleep(outageMs)
    const restoring = performance.now()
    await fault.revert()
    const up = performance.now()
    await sleep(RECOVERY_MS + TAIL_MS)
    window = { down, restoring, up, end: performance.now() }
  } finally {
    await fault.revert()
    await load.close()
  }
  const sameProcess = Object.fromEntries(
    kits.map((k) => [k.name, k.service.running && k.service.pid === pids[k.name]]),
  )
  return { window, samples: load.samples, sameProcess }
}

/** The findings of one service in one outage run (empty when it behaved as the issue asks). */
export function outageFindings(run: OutageRun, kit: Kit, dependency: 'postgres' | 'redis'): Findings {
  const findings = new Findings()
  if (!run.sameProcess[kit.name]) findings.note(`${kit.name} exited or was restarted during the run`)
  checkOutage(
    run.samples.filter((s) => s.service === kit.name),
    kit.probes,
    dependency,
    run.window,
    findings,
  )
  return findings
}

/** Per probe: answers by status or error, and latency p50/max in each phase, for the test log. */
export function summarize(run: OutageRun, kit: Kit): string {
  const lines: string[] = []
  const ms = (xs: number[]) => {
    if (xs.length === 0) return '-'
    const sorted = [...xs].sort((a, b) => a - b)
    return `${Math.round(sorted[Math.floor(sorted.length / 2)]!)}/${Math.round(sorted[sorted.length - 1]!)}`
  }
  for (const probe of kit.probes) {
    const mine = run.samples.filter((s) => s.service === kit.name && s.probe === probe.name)
    const counts = new Map<string, number>()
    for (const s of mine) {
      const key = s.errorCode ?? String(s.status)
      counts.set(key, (counts.get(key) ?? 0) + 1)
    }
    const phases = (['before', 'during', 'transition', 'recovered'] as const)
      .map((p) => `${p} ${ms(mine.filter((s) => phaseOf(s, run.window) === p).map((s) => s.ms))}`)
      .join(', ')
    lines.push(`  ${probe.name}: ${[...counts].map(([k, n]) => `${k}×${n}`).join(' ')}; ms p50/max ${phases}`)
  }
  return `${kit.name}\n${lines.join('\n')}`
}
