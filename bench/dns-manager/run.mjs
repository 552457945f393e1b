#!/usr/bin/env node
// dns-manager benchmark: autocannon, in one run, against
//   1. a bare node:http + pg baseline (baseline.mjs) doing the equivalent lookups,
//   2. GET /rest/quota of the built service (auth + rate limit + database),
//   3. the same operation through POST /rpc (quota.get),
// on the same database, and prints the ratios (service ÷ baseline) as JSON and as the markdown
// rows for BENCHMARKS.md.
//
//   pnpm --filter @quartet/dns-manager build
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres [REDIS_URL=redis://127.0.0.1:6379] \
//     node bench/dns-manager/run.mjs [--connections 50] [--duration 5]
//
// Three rounds; each round measures the three targets for --duration seconds; the reported
// numbers are medians over the rounds, each ratio taken within its round.
//
// Loopback only. The rate limit is raised to 10^6/min so the limiter runs on every request
// without refusing any. The bench schema is dropped at the end.
import { execFileSync, fork, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

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
const appPort = 43_103
const baselinePort = 43_203

const env = {
  ...process.env,
  DATABASE_URL,
  DATABASE_SCHEMA: schema,
  PORT: String(appPort),
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_MINUTE: '1000000',
  JOBS_INTERVAL_MS: '0',
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
const summary = (r) => ({
  requests_per_sec: Math.round(r.requests.average),
  latency_p50_ms: r.latency.p50,
  latency_p99_ms: r.latency.p99,
  non_2xx: r.non2xx,
  errors: r.errors,
})

async function main() {
  const app = spawn(process.execPath, [path.join(appDir, 'dist/main.js')], {
    env,
    stdio: ['ignore', 'inherit', 'inherit'],
  })
  children.push(app)
  await waitFor(`http://127.0.0.1:${appPort}/readyz`)

  // An account with a few subdomains, made the way an operator and a client would.
  const cli = (...args) =>
    JSON.parse(
      execFileSync(process.execPath, [path.join(appDir, 'dist/cli.js'), ...args], { env }).toString(),
    )
  const zone = `bench${process.pid}.test`
  cli('zones:add', zone, '--price-cents', '0', '--term-years', '1')
  const account = cli('accounts:create', '--email', `bench-${process.pid}@example.test`, '--quota', '10')
  const headers = {
    'x-api-key': account.api_key,
    'x-api-secret': account.api_secret,
    'content-type': 'application/json',
  }
  for (const label of ['a', 'b', 'c']) {
    const res = await fetch(`http://127.0.0.1:${appPort}/rest/subdomains`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ subdomain: label, rootdomain: zone }),
    })
    if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${await res.text()}`)
  }

  const baseline = fork(path.join(here, 'baseline.mjs'), [], { env: { ...env, PORT: String(baselinePort) } })
  children.push(baseline)
  await new Promise((resolve) => baseline.once('message', resolve))

  const targets = {
    baseline: { url: `http://127.0.0.1:${baselinePort}/quota`, headers },
    rest: { url: `http://127.0.0.1:${appPort}/rest/quota`, headers },
    rpc: {
      url: `http://127.0.0.1:${appPort}/rpc`,
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', method: 'quota.get', id: 1 }),
    },
  }
  // Sanity: the three answer the same quota.
  for (const [name, t] of Object.entries(targets)) {
    const body = await (
      await fetch(t.url, { method: t.method ?? 'GET', headers: t.headers, body: t.body })
    ).json()
    const quota = body.quota ?? body.result?.quota
    if (quota?.used !== 3) throw new Error(`${name} answered ${JSON.stringify(body)}`)
  }

  // Rounds interleave the three targets, and each ratio compares a target with the baseline of
  // its own round, so load that drifts during the run (other processes on the machine) cancels out.
  for (const t of Object.values(targets)) await cannon(t, 3) // warm-up
  const rounds = []
  for (let round = 0; round < 3; round++) {
    const r = {}
    for (const [name, t] of Object.entries(targets)) r[name] = summary(await cannon(t, duration))
    rounds.push(r)
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const ratio = (name) =>
    Number(median(rounds.map((r) => r[name].requests_per_sec / r.baseline.requests_per_sec)).toFixed(2))
  const results = Object.fromEntries(
    Object.keys(targets).map((name) => [
      name,
      {
        requests_per_sec: median(rounds.map((r) => r[name].requests_per_sec)),
        latency_p50_ms: median(rounds.map((r) => r[name].latency_p50_ms)),
        latency_p99_ms: median(rounds.map((r) => r[name].latency_p99_ms)),
        non_2xx: rounds.reduce((n, r) => n + r[name].non_2xx, 0),
        errors: rounds.reduce((n, r) => n + r[name].errors, 0),
      },
    ]),
  )
  const out = {
    when: new Date().toISOString(),
    connections,
    duration_sec: duration,
    rounds: rounds.length,
    redis: Boolean(process.env.REDIS_URL),
    results,
    ratio_vs_baseline: { rest_quota: ratio('rest'), rpc_quota_get: ratio('rpc') },
  }
  console.log(JSON.stringify(out, null, 2))
  console.log('\n| path | req/s | p50 ms | p99 ms | vs baseline |\n|---|---|---|---|---|')
  for (const [name, label] of [
    ['baseline', 'baseline: node:http + pg'],
    ['rest', 'GET /rest/quota'],
    ['rpc', 'POST /rpc quota.get'],
  ])
    console.log(
      `| ${label} | ${results[name].requests_per_sec} | ${results[name].latency_p50_ms} | ${results[name].latency_p99_ms} | ${name === 'baseline' ? '1.00' : ratio(name).toFixed(2)} |`,
    )
}

try {
  await main()
} finally {
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
  await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {})
  await pool.end()
}
