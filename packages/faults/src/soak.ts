import { mkdirSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Kit } from './kits/common.ts'
import { type Sample, TrickleLoad } from './load.ts'
import { readProcStat, signal, sleep } from './sandbox.ts'
import { buildKits } from './scenario.ts'
import { REPO_ROOT, type ServiceName } from './service-process.ts'
import { startFaultStack } from './stack.ts'

/**
 * The soak of issue 24 item 5: the four services under steady mixed load (each kit's probes,
 * sped up) for SOAK_MINUTES, against a Postgres and a Redis of their own, with every service's
 * RSS and V8 heap sampled every SOAK_SAMPLE_SECONDS. Prints and writes whether memory levels
 * off: start, peak and end, and the slope over the last half of the run.
 */

const minutes = Number(process.env.SOAK_MINUTES ?? 30)
const sampleSeconds = Number(process.env.SOAK_SAMPLE_SECONDS ?? 10)
const rateFactor = Number(process.env.SOAK_RATE_FACTOR ?? 1)
const heapSnapshots = process.env.SOAK_HEAP_SNAPSHOTS === '1'
const cooldownSeconds = Number(process.env.SOAK_COOLDOWN_SECONDS ?? 30)
const out = process.env.SOAK_OUT ?? path.join(REPO_ROOT, 'bench', 'soak', 'results.json')

interface Point {
  /** Seconds since the load started. */
  t: number
  rssMb: number
  heapUsedMb: number | null
}

interface Counts {
  requests: number
  /** Answers other than the probe's usual one, by status or error. */
  unexpected: Record<string, number>
  slowestMs: number
}

const MB = 1024 * 1024

async function heapUsedMb(metricsUrl: string | undefined): Promise<number | null> {
  if (!metricsUrl) return null
  try {
    const text = await (await fetch(metricsUrl, { signal: AbortSignal.timeout(5000) })).text()
    const line = text.split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes'))
    return line ? Number(line.split(' ').pop()) / MB : null
  } catch {
    return null
  }
}

const roundOrNull = (x: number | null | undefined) => (x === null || x === undefined ? null : Math.round(x))

/** Least-squares slope of y over t, per minute. */
function slopePerMinute(points: Array<{ t: number; y: number }>): number {
  const n = points.length
  if (n < 2) return 0
  const mt = points.reduce((a, p) => a + p.t, 0) / n
  const my = points.reduce((a, p) => a + p.y, 0) / n
  const num = points.reduce((a, p) => a + (p.t - mt) * (p.y - my), 0)
  const den = points.reduce((a, p) => a + (p.t - mt) ** 2, 0)
  return den === 0 ? 0 : (num / den) * 60
}

async function main(): Promise<void> {
  const snapshotDir = path.join(REPO_ROOT, 'bench', 'soak', 'heap')
  if (heapSnapshots) {
    mkdirSync(snapshotDir, { recursive: true })
    // Read by ServiceProcess when it starts each service.
    process.env.TEST_FAULTS_NODE_ARGS = `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`
  }
  const stack = await startFaultStack('soak')
  const stop = async () => {
    await stack.close()
  }
  process.once('SIGINT', () => void stop().then(() => process.exit(130)))
  try {
    const kits = await buildKits(stack)
    const faster = (kit: Kit) =>
      kit.probes.map((p) => ({ ...p, everyMs: Math.max(5, p.everyMs / rateFactor) }))
    const counts = new Map<ServiceName, Counts>()
    const usual = new Map(kits.flatMap((k) => k.probes.map((p) => [`${k.name} ${p.name}`, p.ok])))
    const count = (s: Sample) => {
      const c = counts.get(s.service) ?? { requests: 0, unexpected: {}, slowestMs: 0 }
      c.requests++
      if (s.errorCode || !usual.get(`${s.service} ${s.probe}`)?.(s)) {
        const key = `${s.probe}: ${s.errorCode ?? s.status}`
        c.unexpected[key] = (c.unexpected[key] ?? 0) + 1
      }
      c.slowestMs = Math.round(Math.max(c.slowestMs, s.ms))
      counts.set(s.service, c)
    }
    const load = new TrickleLoad(
      kits.map((k) => ({ service: k.name, url: k.service.url, probes: faster(k) })),
      { keep: false, onSample: count },
    )
    const series = new Map<ServiceName, Point[]>(kits.map((k) => [k.name, []]))
    const loadavgStart = os.loadavg()
    const started = performance.now()
    const takeSample = async () => {
      const t = (performance.now() - started) / 1000
      await Promise.all(
        kits.map(async (k) => {
          const stat = k.service.pid ? readProcStat(k.service.pid) : null
          if (!stat) return
          series
            .get(k.name)!
            .push({ t, rssMb: stat.rssBytes / MB, heapUsedMb: await heapUsedMb(k.service.metricsUrl) })
        }),
      )
    }
    load.start()
    const endAt = started + minutes * 60_000
    let snapshotTaken = false
    while (performance.now() < endAt) {
      await takeSample()
      if (heapSnapshots && !snapshotTaken && performance.now() - started > (minutes * 60_000) / 3) {
        for (const k of kits) if (k.service.pid) signal(k.service.pid, 'SIGUSR2')
        snapshotTaken = true
      }
      const last = [...series.values()].map((s) => s.at(-1))
      process.stdout.write(
        `${new Date().toISOString()} ${kits.map((k, i) => `${k.name} ${last[i]?.rssMb.toFixed(0)} MB`).join(', ')}\n`,
      )
      await sleep(Math.min(sampleSeconds * 1000, Math.max(0, endAt - performance.now())))
    }
    await takeSample()
    if (heapSnapshots) {
      for (const k of kits) if (k.service.pid) signal(k.service.pid, 'SIGUSR2')
      await sleep(15_000)
    }
    await load.close()
    const loadavgEnd = os.loadavg()
    // Idle a while: memory that load holds (queues, pools) comes back; a leak does not.
    await sleep(cooldownSeconds * 1000)
    const idle = new Map<ServiceName, Point | undefined>()
    await takeSample()
    for (const k of kits) idle.set(k.name, series.get(k.name)!.at(-1))

    const summary = kits.map((k) => {
      const points = series.get(k.name)!
      const half = points.filter((p) => p.t >= (minutes * 60) / 2)
      const rss = points.map((p) => p.rssMb)
      const slope = slopePerMinute(half.map((p) => ({ t: p.t, y: p.rssMb })))
      const heapSlope = slopePerMinute(
        half.filter((p) => p.heapUsedMb !== null).map((p) => ({ t: p.t, y: p.heapUsedMb! })),
      )
      const end = rss.at(-1) ?? 0
      return {
        service: k.name,
        rss_start_mb: Math.round(rss[0] ?? 0),
        rss_peak_mb: Math.round(Math.max(...rss)),
        rss_end_mb: Math.round(end),
        rss_slope_last_half_mb_per_min: Number(slope.toFixed(3)),
        heap_used_start_mb: roundOrNull(points.find((p) => p.heapUsedMb !== null)?.heapUsedMb),
        heap_used_end_mb: roundOrNull(points.findLast((p) => p.heapUsedMb !== null)?.heapUsedMb),
        heap_slope_last_half_mb_per_min: Number(heapSlope.toFixed(3)),
        rss_after_idle_mb: roundOrNull(idle.get(k.name)?.rssMb),
        heap_used_after_idle_mb: roundOrNull(idle.get(k.name)?.heapUsedMb),
        // Growth the last half's slope would add over the whole last half, against the end RSS.
        levels_off: slope * (minutes / 2) < 0.05 * end,
        restarted_or_exited: !k.service.running,
        ...counts.get(k.name),
      }
    })
    const result = {
      date: new Date().toISOString(),
      minutes,
      sample_seconds: sampleSeconds,
      rate_factor: rateFactor,
      node: process.version,
      cpus: os.cpus().length,
      loadavg_start: loadavgStart.map((x) => Number(x.toFixed(2))),
      loadavg_end: loadavgEnd.map((x) => Number(x.toFixed(2))),
      summary,
      series: Object.fromEntries(series),
    }
    mkdirSync(path.dirname(out), { recursive: true })
    writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`)
    process.stdout.write(`\n${JSON.stringify({ ...result, series: undefined }, null, 2)}\n`)
    process.stdout.write(
      `\n| service | requests | unexpected answers | RSS start | peak | end | RSS slope, last half | heap used start → end | after ${cooldownSeconds} s idle: RSS, heap | levels off |\n` +
        `| --- | --: | --: | --: | --: | --: | --: | --: | --: | --- |\n` +
        summary
          .map((s) => {
            const bad = Object.values(s.unexpected ?? {}).reduce((a, n) => a + n, 0)
            return `| ${s.service} | ${s.requests} | ${bad} | ${s.rss_start_mb} MB | ${s.rss_peak_mb} MB | ${s.rss_end_mb} MB | ${s.rss_slope_last_half_mb_per_min} MB/min | ${s.heap_used_start_mb} → ${s.heap_used_end_mb} MB | ${s.rss_after_idle_mb} MB, ${s.heap_used_after_idle_mb} MB | ${s.levels_off ? 'yes' : '**no**'} |`
          })
          .join('\n') +
        '\n',
    )
  } finally {
    await stop()
  }
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
