#!/usr/bin/env node
// key-info benchmark: autocannon against GET /api/v1/key of the built service (dist/main.js),
// next to a bare node:http + pg baseline (baseline.mjs) measured in the same run on the same
// database. Prints a JSON summary and the markdown row for BENCHMARKS.md.
//
//   pnpm --filter @quartet/key-info build
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=redis://127.0.0.1:6379] \
//     node bench/key-info/run.mjs [--connections 50] [--duration 15] [--rounds 5]
//
// With REDIS_URL, a third reference runs too (floor.mjs): node:http plus one Redis command per
// request, the floor of any design that checks a shared rate limit that way on this machine.
// BENCH_SERVICE_NODE_ARGS passes node flags to the service only (e.g. --cpu-prof).
//
// Loopback only; bounded in time: two 5 s warm-ups, then --rounds alternating slices of the
// baseline, GET /api/v1/key and GET /healthz, --duration seconds per series in all.
import { execFileSync, fork, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../free-port.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
const appDir = path.join(root, 'apps/key-info')
const requireFromRoot = createRequire(path.join(root, 'package.json'))
const autocannon = requireFromRoot('autocannon')
const pg = createRequire(path.join(appDir, 'package.json'))('pg')

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const connections = arg('connections', 50)
const duration = arg('duration', 15)
const rounds = arg('rounds', 5)
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const schema = process.env.BENCH_SCHEMA_NAME ?? `key_info_bench_${process.pid}`
const appPort = await freePort()
const baselinePort = await freePort()
const floorPort = await freePort()

const env = {
  ...process.env,
  DATABASE_URL,
  DATABASE_SCHEMA: schema,
  PORT: String(appPort),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  KEY_RATE_LIMIT_PER_MINUTE: '1000000000',
}
for (const k of Object.keys(env)) if (k.startsWith('KEY_INFO_')) delete env[k]

const children = []
const stopAll = () => children.forEach((c) => c.exitCode === null && c.kill('SIGTERM'))
process.on('exit', stopAll)

async function waitFor(url, ms = 30_000) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).status < 500) return
    } catch {}
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${url} did not answer in ${ms} ms`)
}

/** CPU time (user + system) a process has used so far, in µs (Linux: /proc, 100 ticks/s). */
function cpuMicros(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}

/** One autocannon run, with the CPU the serving process spent per answered request. */
async function cannon(url, key, seconds, servingPid) {
  const cpuBefore = servingPid ? cpuMicros(servingPid) : 0
  const result = await new Promise((resolve, reject) => {
    autocannon(
      { url, connections, duration: seconds, headers: key ? { authorization: `Bearer ${key}` } : {} },
      (err, r) => (err ? reject(err) : resolve(r)),
    )
  })
  if (servingPid) result.cpuMicros = cpuMicros(servingPid) - cpuBefore
  return result
}

/** Slices of one series: requests/s over all of them; p50/p99 as the median of the slices'. */
function combine(results) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const requests = results.reduce((n, r) => n + r.requests.total, 0)
  const seconds = results.reduce((n, r) => n + r.duration, 0)
  return {
    requests_per_sec: Math.round(requests / seconds),
    latency_p50_ms: median(results.map((r) => r.latency.p50)),
    latency_p99_ms: median(results.map((r) => r.latency.p99)),
    latency_p99_9_ms: median(results.map((r) => r.latency.p99_9)),
    // The serving process only (not Postgres, Redis or autocannon): its own cost per answer.
    server_cpu_us_per_request: Math.round(
      results.reduce((n, r) => n + r.cpuMicros, 0) / results.reduce((n, r) => n + r.requests.total, 0),
    ),
    non_2xx: results.reduce((n, r) => n + r.non2xx, 0),
    errors: results.reduce((n, r) => n + r.errors, 0),
  }
}

async function main() {
  // 1. The service, migrating its own bench schema at start.
  const nodeArgs = (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean)
  const app = spawn(process.execPath, [...nodeArgs, path.join(appDir, 'dist/main.js')], {
    env,
    stdio: ['ignore', process.env.BENCH_SERVICE_STDOUT ? 'inherit' : 'ignore', 'inherit'],
  })
  children.push(app)
  app.once('exit', (code) => {
    if (code) {
      console.error(`key-info exited with ${code}`)
      process.exit(1)
    }
  })
  await waitFor(`http://127.0.0.1:${appPort}/readyz`)

  // 2. A management key and a key under test with a month of usage in its rollups.
  const cli = (...args) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(appDir, 'dist/cli.js'), ...args], { env }).toString(),
    )
  const admin = cli('keys:create', '--name', 'bench admin', '--management')
  const subject = cli('keys:create', '--name', 'bench subject', '--limit', '100', '--limit-reset', 'monthly')
  const client = new pg.Client({ connectionString: DATABASE_URL })
  await client.connect()
  const { rows } = await client.query(`SELECT workspace_id FROM "${schema}".api_key WHERE hash = $1`, [
    admin.hash,
  ])
  await client.query(`UPDATE "${schema}".api_key SET workspace_id = $1 WHERE hash = $2`, [
    rows[0].workspace_id,
    subject.hash,
  ])
  const now = Date.now()
  const events = Array.from({ length: 1000 }, (_, i) => ({
    id: `bench-${i}`,
    key_hash: subject.hash,
    amount: 0.001 * (i % 7),
    byok: i % 5 === 0,
    free_model: i % 3 === 0,
    occurred_at: new Date(now - (i % 40) * 86_400_000).toISOString(),
  }))
  const recorded = await fetch(`http://127.0.0.1:${appPort}/api/v1/usage`, {
    method: 'POST',
    headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events }),
  }).then((r) => r.json())
  if (recorded.data?.accepted !== 1000)
    throw new Error(`seeding usage failed: ${JSON.stringify(recorded).slice(0, 300)}`)

  // 3. The baseline, in its own process like the service.
  const baseline = fork(path.join(here, 'baseline.mjs'), [], {
    env: { ...env, BASELINE_PORT: String(baselinePort), BENCH_SCHEMA: schema },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  children.push(baseline)
  await new Promise((resolve) => baseline.once('message', resolve))

  // With Redis, the floor as well: node:http plus one Redis command per request (floor.mjs).
  const floor = process.env.REDIS_URL
    ? fork(path.join(here, 'floor.mjs'), [], {
        env: { ...env, FLOOR_PORT: String(floorPort) },
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      })
    : undefined
  if (floor) {
    children.push(floor)
    await new Promise((resolve) => floor.once('message', resolve))
  }

  const appUrl = `http://127.0.0.1:${appPort}/api/v1/key`
  const baseUrl = `http://127.0.0.1:${baselinePort}/`
  const floorUrl = `http://127.0.0.1:${floorPort}/`
  const check = await fetch(appUrl, { headers: { authorization: `Bearer ${subject.key}` } }).then((r) =>
    r.json(),
  )
  if (typeof check.data?.usage_monthly !== 'number')
    throw new Error(`unexpected answer: ${JSON.stringify(check)}`)

  // 4. Warm them (JIT, pools), then measure in alternating slices, so that load from anything
  //    else on the machine falls on all series alike (a shared 2-core box is noisy).
  await cannon(baseUrl, subject.key, 5)
  await cannon(appUrl, subject.key, 5)
  if (floor) await cannon(floorUrl, subject.key, 5)
  const healthUrl = `http://127.0.0.1:${appPort}/healthz`
  const slices = { base: [], svc: [], skeleton: [], floor: [] }
  for (let i = 0; i < rounds; i++) {
    slices.base.push(await cannon(baseUrl, subject.key, duration / rounds, baseline.pid))
    if (floor) slices.floor.push(await cannon(floorUrl, subject.key, duration / rounds, floor.pid))
    slices.svc.push(await cannon(appUrl, subject.key, duration / rounds, app.pid))
    // What the shared express pipeline (request id, security headers, metrics, router) leaves
    // a route that is not a hot route: GET /healthz of the same process, no database, no kv.
    slices.skeleton.push(await cannon(healthUrl, null, duration / rounds, app.pid))
  }
  const base = combine(slices.base)
  const svc = combine(slices.svc)
  const skeleton = combine(slices.skeleton)
  const floorSeries = floor ? combine(slices.floor) : null
  const load = (await import('node:os')).loadavg()

  const result = {
    when: new Date().toISOString(),
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    redis: Boolean(process.env.REDIS_URL),
    connections,
    duration_s: duration,
    rounds,
    load_average_1m: Number(load[0].toFixed(2)),
    baseline: base,
    floor_http_plus_one_redis_command: floorSeries,
    key_info: svc,
    healthz_same_process: skeleton,
    ratio: Number((svc.requests_per_sec / base.requests_per_sec).toFixed(3)),
    healthz_ratio: Number((skeleton.requests_per_sec / base.requests_per_sec).toFixed(3)),
    targets: { ratio_at_least: 0.4, p99_below_ms: 10 },
    met: svc.requests_per_sec / base.requests_per_sec >= 0.4 && svc.latency_p99_ms < 10,
  }
  console.log(JSON.stringify(result, null, 2))
  const f = floorSeries ?? { requests_per_sec: '–', latency_p99_ms: '–', server_cpu_us_per_request: '–' }
  console.log(
    `| ${connections} | ${result.redis ? 'Redis' : 'memory'} | ${base.requests_per_sec} | ${base.latency_p99_ms} | ${base.server_cpu_us_per_request} | ${f.requests_per_sec} | ${f.latency_p99_ms} | ${f.server_cpu_us_per_request} | ${svc.requests_per_sec} | ${svc.latency_p50_ms} | ${svc.latency_p99_ms} | ${svc.server_cpu_us_per_request} | ${(result.ratio * 100).toFixed(0)}% | ${(result.healthz_ratio * 100).toFixed(0)}% | ${result.load_average_1m} |`,
  )

  // A refusal (the rate limit, a 503) is cheaper than the read it stands for: such a run says
  // nothing about the read.
  const failed = Object.entries({ baseline: base, floor: floorSeries, 'key-info': svc, healthz: skeleton })
    .filter(([, s]) => s && (s.non_2xx || s.errors))
    .map(([name, s]) => `${name}: ${s.non_2xx} not 2xx, ${s.errors} errors`)
  if (failed.length) {
    console.error(`NOT A VALID RUN, these series had failed answers:\n  ${failed.join('\n  ')}`)
    process.exitCode = 1
  }

  if (!process.env.BENCH_KEEP_SCHEMA) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
  await client.end()
}

main()
  .catch((err) => {
    console.error(err)
    process.exitCode = 1
  })
  .finally(stopAll)
