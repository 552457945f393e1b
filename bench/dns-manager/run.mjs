#!/usr/bin/env node
// dns-manager benchmark: autocannon, in one run, against
//   1. a bare node:http + pg baseline (baseline.mjs) doing the same lookups for each read,
//   2. the built service: GET /rest/quota, POST /rest/auth/verify, GET /rest/subdomains (a page
//      of 50), GET /rest/subdomains/{id}/records, JSON-RPC quota.get, a JSON-RPC batch of 10
//      reads, and the GraphQL query of quota + subdomains,
//   3. the bytes floor (floor.mjs): a bare node:http answering each read with the service's own
//      answer bytes and doing nothing else, for what moving those bytes costs in this run,
// on the same database, and prints the ratios (service ÷ baseline, each against the baseline
// answering the same read in the same round) as JSON and as the markdown rows for BENCHMARKS.md,
// with p99 latency, the CPU time each process spent per request and what this machine's Postgres
// and Redis spent on the same requests, the bytes of each answer and how many MB/s they came to (a large answer's p99 is bound by moving its bytes through the
// kernel to a client on the same two cores), the load average, and which
// path answered the JSON-RPC and GraphQL requests (kept answers, graphql-jit, graphql-js, Yoga;
// from the service's /metrics at the end).
//
//   pnpm --filter @quartet/dns-manager build
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=redis://127.0.0.1:6379] \
//     node bench/dns-manager/run.mjs [--connections 50] [--duration 5] [--rounds 3] [--only rest_quota,…]
//
// Each round measures every pair (baseline, service) for --duration seconds, and the bytes floor
// (floor.mjs: a bare node:http answering the service's own answer bytes, no work at all) beside
// them; the reported numbers are medians over the rounds, each ratio taken within its round.
//
// Loopback only. The rate limit is raised to 10^9/min so the limiter runs on every request
// without refusing any (10^6, the old cap, ran out at ~17k requests/s on a fast machine); a
// series with any answer that is not a 2xx makes the run fail, since a refusal is cheaper than
// the read it stands for. The bench schema is dropped at the end.
import { execFileSync, fork, spawn } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../free-port.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '../..')
const appDir = path.join(root, 'apps/dns-manager')
const autocannon = createRequire(path.join(root, 'package.json'))('autocannon')
const pg = createRequire(path.join(root, 'packages/core/package.json'))('pg')

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const connections = arg('connections', 50)
const duration = arg('duration', 5)
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const schema = `dns_manager_bench_${process.pid}`
const appPort = await freePort()
const baselinePort = await freePort()
const floorPort = await freePort()

const env = {
  ...process.env,
  DATABASE_URL,
  DATABASE_SCHEMA: schema,
  PORT: String(appPort),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'error',
  RATE_LIMIT_PER_MINUTE: '1000000000',
  JOBS_INTERVAL_MS: '0',
  // Read once at the end: how the JSON-RPC and GraphQL requests were answered.
  METRICS_TOKEN: `bench-metrics-${process.pid}-token`,
}
for (const k of Object.keys(env)) if (k.startsWith('DNS_MANAGER_')) delete env[k]

const children = []
process.on('exit', () => children.forEach((c) => c.exitCode === null && c.kill('SIGTERM')))

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

const cannon = (opts, seconds) =>
  new Promise((resolve, reject) =>
    autocannon({ connections, duration: seconds, ...opts }, (err, r) => (err ? reject(err) : resolve(r))),
  )

/** utime + stime of a process, in µs (from /proc; clock ticks are 10 ms here). */
function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10_000
}
/**
 * utime + stime of this machine's Postgres and Redis server processes together, in µs, by
 * process id: what the stores spent answering a series (the baseline's queries, the service's
 * Redis commands and what it still asks Postgres). Only stores on this machine are seen.
 */
function storeMicros() {
  const byPid = new Map()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
      if (comm === 'postgres' || comm === 'redis-server') byPid.set(pid, cpuMicros(pid))
    } catch {}
  }
  return byPid
}
/** The CPU the stores spent between two storeMicros (a process started between counts whole). */
const storeSpent = (before, after) => {
  let sum = 0
  for (const [pid, us] of after) sum += us - (before.get(pid) ?? 0)
  return sum
}
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ')

/** One autocannon run with the CPU the serving process spent per request. */
async function measure(target, pid, seconds) {
  const storesBefore = storeMicros()
  const cpuBefore = cpuMicros(pid)
  const r = await cannon(target, seconds)
  const cpu = cpuMicros(pid) - cpuBefore
  const stores = storeSpent(storesBefore, storeMicros())
  return {
    requests_per_sec: Math.round(r.requests.average),
    latency_p50_ms: r.latency.p50,
    latency_p99_ms: r.latency.p99,
    cpu_us_per_request: r.requests.total ? Math.round(cpu / r.requests.total) : null,
    // Postgres and Redis (on this machine) for the same requests: a read the service answers from
    // its cache still costs Redis a share of a command, the baseline's costs Postgres its queries.
    store_cpu_us_per_request: r.requests.total ? Math.round(stores / r.requests.total) : null,
    // Response bytes (head and body) per answer, and all of them a second: what the kernel and
    // the client on the same two cores move, whoever made the answer.
    bytes_per_answer: r.requests.total ? Math.round(r.throughput.total / r.requests.total) : null,
    mb_per_sec: Number((r.throughput.average / 1e6).toFixed(1)),
    non_2xx: r.non2xx,
    errors: r.errors,
  }
}

async function main() {
  console.error(`load average at start: ${load()}`)
  const app = spawn(
    process.execPath,
    [...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), path.join(appDir, 'dist/main.js')],
    {
      env,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  )
  children.push(app)
  await waitFor(`http://127.0.0.1:${appPort}/readyz`)

  // An account with 50 subdomains, one of them with 10 records, made the way an operator and a
  // client would.
  const cli = (...args) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(appDir, 'dist/cli.js'), ...args], { env }).toString(),
    )
  const zone = `bench${process.pid}.test`
  cli('zones:add', zone, '--price-cents', '0', '--term-years', '1')
  const account = cli('accounts:create', '--email', `bench-${process.pid}@example.test`, '--quota', '60')
  const headers = {
    'x-api-key': account.api_key,
    'x-api-secret': account.api_secret,
    'content-type': 'application/json',
  }
  const post = async (url, body, status = 201) => {
    const res = await fetch(`http://127.0.0.1:${appPort}${url}`, {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
    })
    if (res.status !== status) throw new Error(`seeding ${url} failed: ${res.status} ${await res.text()}`)
    return res.json()
  }
  const ids = []
  for (let i = 0; i < 50; i++)
    ids.push((await post('/rest/subdomains', { subdomain: `s${i}`, rootdomain: zone })).subdomain.id)
  const home = ids[0]
  for (let i = 0; i < 10; i++)
    await post(`/rest/subdomains/${home}/records`, { type: 'A', name: `h${i}`, content: `8.8.4.${i + 1}` })

  const baseline = fork(path.join(here, 'baseline.mjs'), [], { env: { ...env, PORT: String(baselinePort) } })
  children.push(baseline)
  await new Promise((resolve) => baseline.once('message', resolve))

  const rpcBatch = JSON.stringify(
    Array.from(
      { length: 10 },
      (_, i) =>
        [
          { jsonrpc: '2.0', id: i, method: 'quota.get' },
          { jsonrpc: '2.0', id: i, method: 'subdomains.list', params: {} },
          { jsonrpc: '2.0', id: i, method: 'dns_records.list', params: { subdomain_id: home } },
        ][i % 3],
    ),
  )
  const graphql = JSON.stringify({
    query:
      '{ quota { quota { used total available } balance_cents } subdomains { subdomains { id subdomain rootdomain full_domain status created_at updated_at expires_at never_expires } next_cursor } }',
  })
  const svc = (p) => `http://127.0.0.1:${appPort}${p}`
  const base = (p) => `http://127.0.0.1:${baselinePort}${p}`
  // name → [label, service request, baseline request, check of the service's answer]
  const pairs = {
    rest_quota: [
      '`GET /rest/quota`',
      { url: svc('/rest/quota') },
      { url: base('/quota') },
      (b) => b.quota.used === 50,
    ],
    rest_verify: [
      '`POST /rest/auth/verify`',
      { url: svc('/rest/auth/verify'), method: 'POST' },
      { url: base('/auth/verify'), method: 'POST' },
      (b) => b.account.quota.used === 50,
    ],
    rest_subdomains: [
      '`GET /rest/subdomains` (page of 50)',
      { url: svc('/rest/subdomains') },
      { url: base('/subdomains') },
      (b) => b.subdomains.length === 50,
    ],
    rest_records: [
      '`GET /rest/subdomains/{id}/records` (10)',
      { url: svc(`/rest/subdomains/${home}/records`) },
      { url: base(`/subdomains/${home}/records`) },
      (b) => b.dns_records.length === 10,
    ],
    rpc_quota: [
      'JSON-RPC `quota.get`',
      {
        url: svc('/rpc'),
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', method: 'quota.get', id: 1 }),
      },
      {
        url: base('/rpc'),
        method: 'POST',
        body: JSON.stringify({ jsonrpc: '2.0', method: 'quota.get', id: 1 }),
      },
      (b) => b.result.quota.used === 50,
    ],
    rpc_batch: [
      'JSON-RPC batch of 10 reads',
      { url: svc('/rpc'), method: 'POST', body: rpcBatch },
      { url: base('/rpc'), method: 'POST', body: rpcBatch },
      (b) => b.length === 10 && b.every((r) => r.result),
    ],
    graphql: [
      'GraphQL `{ quota, subdomains }`',
      { url: svc('/graphql'), method: 'POST', body: graphql },
      { url: base('/graphql'), method: 'POST', body: graphql },
      (b) => b.data.subdomains.subdomains.length === 50 && b.data.quota.quota.used === 50,
    ],
  }
  const onlyArg = process.argv.indexOf('--only')
  const only = onlyArg > 0 ? process.argv[onlyArg + 1].split(',') : null
  const chosen = Object.entries(pairs).filter(([name]) => !only || only.includes(name))
  // Sanity: each answers what it should. Its bytes are what the floor answers.
  const answers = []
  for (const [name, [, service, , check]] of chosen) {
    const method = service.method ?? 'GET'
    const res = await fetch(service.url, { method, headers, body: service.body })
    const bytes = Buffer.from(await res.arrayBuffer())
    const body = JSON.parse(bytes.toString('utf8'))
    if (res.status !== 200 || !check(body))
      throw new Error(`${name} answered ${res.status} ${JSON.stringify(body).slice(0, 300)}`)
    answers.push({
      method,
      path: new URL(service.url).pathname,
      request: service.body ?? '',
      contentType: res.headers.get('content-type'),
      body: bytes.toString('base64'),
    })
  }
  const floor = fork(path.join(here, 'floor.mjs'), [], { env: { ...env, PORT: String(floorPort) } })
  children.push(floor)
  floor.send(answers)
  await new Promise((resolve) => floor.once('message', resolve))
  const floorOf = (service) => ({
    ...service,
    url: `http://127.0.0.1:${floorPort}${new URL(service.url).pathname}`,
  })

  for (const [, [, service, baselineReq]] of chosen) {
    await cannon({ ...service, headers }, 2) // warm-up
    await cannon({ ...baselineReq, headers }, 2)
    await cannon({ ...floorOf(service), headers }, 1)
  }
  const rounds = []
  const loads = []
  for (let round = 0; round < arg('rounds', 3); round++) {
    loads.push(load())
    const r = {}
    for (const [name, [, service, baselineReq]] of chosen) {
      const b = await measure({ ...baselineReq, headers }, baseline.pid, duration)
      const s = await measure({ ...service, headers }, app.pid, duration)
      const f = await measure({ ...floorOf(service), headers }, floor.pid, duration)
      r[name] = { baseline: b, service: s, floor: f, ratio: s.requests_per_sec / b.requests_per_sec }
    }
    rounds.push(r)
  }
  loads.push(load())
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const med = (name, side, field) => median(rounds.map((r) => r[name][side][field]))
  const results = Object.fromEntries(
    chosen.map(([name]) => [
      name,
      Object.fromEntries(
        ['baseline', 'service', 'floor'].map((side) => [
          side,
          {
            requests_per_sec: med(name, side, 'requests_per_sec'),
            latency_p50_ms: med(name, side, 'latency_p50_ms'),
            latency_p99_ms: med(name, side, 'latency_p99_ms'),
            cpu_us_per_request: med(name, side, 'cpu_us_per_request'),
            store_cpu_us_per_request: med(name, side, 'store_cpu_us_per_request'),
            bytes_per_answer: med(name, side, 'bytes_per_answer'),
            mb_per_sec: med(name, side, 'mb_per_sec'),
            non_2xx: rounds.reduce((n, r) => n + r[name][side].non_2xx, 0),
            errors: rounds.reduce((n, r) => n + r[name][side].errors, 0),
          },
        ]),
      ),
    ]),
  )
  const ratios = Object.fromEntries(
    chosen.map(([name]) => [name, Number(median(rounds.map((r) => r[name].ratio)).toFixed(2))]),
  )
  // Which path answered (a kept answer, graphql-jit, graphql-js, Yoga), over the whole run.
  const metrics = await (
    await fetch(svc('/metrics'), { headers: { authorization: `Bearer ${env.METRICS_TOKEN}` } })
  ).text()
  const answeredBy = Object.fromEntries(
    [
      ...metrics.matchAll(
        /^dns_manager_(graphql_executions|memoised_answers)_total\{(\w+)="([^"]+)"[^}]*\} (\d+)/gm,
      ),
    ].map(([, metric, , label, value]) => [`${metric}{${label}}`, Number(value)]),
  )
  const out = {
    when: new Date().toISOString(),
    node: process.version,
    connections,
    duration_sec: duration,
    rounds: rounds.length,
    redis: Boolean(process.env.REDIS_URL),
    load_average_1_5_15_per_round: loads,
    results,
    ratio_vs_baseline: ratios,
    answered_by: answeredBy,
  }
  console.log(JSON.stringify(out, null, 2))
  console.log(
    `\n| read (${connections} connections) | baseline req/s | service req/s | **vs baseline** | p99 ms (baseline / service) | CPU µs/req (baseline / service) | stores' CPU µs/req (baseline / service) | service answer bytes, MB/s | bytes floor: req/s, p99 ms |\n|---|---|---|---|---|---|---|---|---|`,
  )
  for (const [name, [label]] of chosen) {
    const { baseline: b, service: s, floor: f } = results[name]
    console.log(
      `| ${label} | ${b.requests_per_sec} | ${s.requests_per_sec} | **${ratios[name].toFixed(2)}** | ${b.latency_p99_ms} / ${s.latency_p99_ms} | ${b.cpu_us_per_request} / ${s.cpu_us_per_request} | ${b.store_cpu_us_per_request} / ${s.store_cpu_us_per_request} | ${s.bytes_per_answer}, ${s.mb_per_sec} | ${f.requests_per_sec}, ${f.latency_p99_ms} |`,
    )
  }
  console.log(`\nload average (1/5/15 min) at each round's start and the end: ${loads.join(' → ')}`)
  const refused = chosen.flatMap(([name]) =>
    ['baseline', 'service', 'floor']
      .filter((side) => results[name][side].non_2xx || results[name][side].errors)
      .map(
        (side) =>
          `${name} ${side}: ${results[name][side].non_2xx} not 2xx, ${results[name][side].errors} errors`,
      ),
  )
  if (refused.length) {
    console.error(`NOT A VALID RUN, these series had failed answers:\n  ${refused.join('\n  ')}`)
    process.exitCode = 1
  }
  console.log(
    `answered by: ${Object.entries(answeredBy)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  )
}

try {
  await main()
} finally {
  // Stopped (and waited for) before their schema goes, so no request meets a missing table.
  await Promise.all(
    children.map((c) =>
      c.exitCode === null && c.signalCode === null
        ? new Promise((resolve) => {
            c.once('exit', resolve)
            c.kill('SIGTERM')
          })
        : null,
    ),
  )
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
  await pool.end()
}
