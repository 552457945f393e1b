#!/usr/bin/env node
// Memory and start-up of the four services as they ship (issue 17, item 3): each started from its
// bundle (`apps/<app>/dist/main.js`), beside a bare `node:http` process in the same run, on the
// machine's Postgres and Redis (each service in a schema and key prefix of this run). Prints:
//
//   ready ms        process start → first 200 from /readyz, migrations already up to date (each
//                   service is started once before, to apply them, and stopped)
//   idle MB         RSS 10 s after ready, and the highest RSS until then (idle max)
//   load peak MB    highest RSS while autocannon (50 connections, --load-seconds) hits the
//                   service's usual read: design-archive a document (gzip), key-info GET
//                   /api/v1/key, dns-manager GET /rest/quota, pickup-share GET /api/site
//   after MB        RSS right after the load, and 10 s later
//
//   pnpm turbo run build --filter=./apps/*
//   DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres REDIS_URL=redis://127.0.0.1:6379 \
//     node bench/memory/run.mjs [--load-seconds 10] [--node-flags "--enable-source-maps"] [--only key-info,…]
//
// `--node-flags` passes flags to every service's node (the launcher used to add
// --enable-source-maps). RSS is VmRSS from /proc; heap from process.memoryUsage via /metrics is
// not needed. Loopback only; the schemas are dropped at the end.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../free-port.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const autocannon = createRequire(path.join(root, 'package.json'))('autocannon')
const pg = createRequire(path.join(root, 'packages/core/package.json'))('pg')

const argOf = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : fallback
}
const loadSeconds = Number(argOf('load-seconds', 10))
const idleSeconds = Number(argOf('idle-seconds', 10))
const nodeFlags = (argOf('node-flags', '') ?? '').split(' ').filter(Boolean)
const only = argOf('only', null)?.split(',')
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'
const REDIS_URL = process.env.REDIS_URL
const run = `mem${process.pid}`
const work = mkdtempSync(path.join(tmpdir(), 'quartet-membench-'))

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' / ')
const rssMb = (pid) => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024
}

const SERVICES = ['design-archive', 'key-info', 'dns-manager', 'pickup-share'].filter(
  (name) => !only || only.includes(name),
)
const schemaOf = (name) => `${name.replaceAll('-', '_')}_${run}`

function envOf(name, port) {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME ?? '/root',
    // The runtime settings an operator gives (infra/docker/Dockerfile): glibc's MALLOC_* and
    // NODE_OPTIONS, passed on when this run was started with them.
    ...Object.fromEntries(
      Object.entries(process.env).filter(([name]) => name.startsWith('MALLOC_') || name === 'NODE_OPTIONS'),
    ),
    NODE_ENV: 'production',
    DATABASE_URL,
    DATABASE_SCHEMA: schemaOf(name),
    ...(REDIS_URL ? { REDIS_URL, REDIS_KEY_PREFIX: `${run}:${name}:` } : {}),
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    JOBS_INTERVAL_MS: '0',
    BLOB_DIR: path.join(work, 'blobs'),
    REPO_CACHE_DIR: path.join(work, 'repos'),
    // Rate limits out of the way: the load is one client.
    KEY_RATE_LIMIT_PER_MINUTE: '1000000',
    RATE_LIMIT_PER_MINUTE: '1000000',
  }
}

const children = new Set()
function start(name, port) {
  const entry = path.join(root, 'apps', name, 'dist', 'main.js')
  const child = spawn(process.execPath, [...nodeFlags, entry], {
    cwd: path.join(root, 'apps', name),
    env: envOf(name, port),
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  children.add(child)
  child.once('exit', () => children.delete(child))
  return child
}
async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGTERM')
  await exited
}
async function untilReady(url, ms = 30_000) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).status === 200) return
    } catch {}
    await sleep(10)
  }
  throw new Error(`${url} not ready in ${ms} ms`)
}
const cli = (name, port, ...args) =>
  JSON.parse(
    execFileSync(process.execPath, [path.join(root, 'apps', name, 'dist', 'cli.js'), ...args], {
      env: envOf(name, port),
    }).toString(),
  )

/** The usual read of each service, with whatever it needs made through its own CLI or API. */
async function targetOf(name, port) {
  const base = `http://127.0.0.1:${port}`
  switch (name) {
    case 'design-archive':
      return { url: `${base}/design-api/v1/terms.json`, headers: { 'accept-encoding': 'gzip' } }
    case 'key-info': {
      const made = cli(name, port, 'keys:create', '--name', 'membench')
      return { url: `${base}/api/v1/key`, headers: { authorization: `Bearer ${made.key}` } }
    }
    case 'dns-manager': {
      const made = cli(name, port, 'accounts:create', '--email', `${run}@example.test`, '--quota', '5')
      return {
        url: `${base}/rest/quota`,
        headers: { 'x-api-key': made.api_key, 'x-api-secret': made.api_secret },
      }
    }
    case 'pickup-share':
      return { url: `${base}/api/site` }
    default:
      return { url: `${base}/healthz` }
  }
}

async function measure(name, child, port, target) {
  const readyAt = performance.now()
  void readyAt
  // The highest RSS of the idle wait too: V8's memory reducer shrinks a young generation the
  // start grew about 8 s after the start's last full GC, so the 10 s reading may fall either side.
  let idleMax = 0
  const idleSampler = setInterval(() => {
    try {
      idleMax = Math.max(idleMax, rssMb(child.pid))
    } catch {}
  }, 200)
  await sleep(idleSeconds * 1000)
  clearInterval(idleSampler)
  const idle = rssMb(child.pid)
  idleMax = Math.max(idleMax, idle)
  let peak = idle
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(child.pid))
    } catch {}
  }, 200)
  const result = await new Promise((resolve, reject) =>
    autocannon({ ...target, connections: 50, duration: loadSeconds }, (err, r) =>
      err ? reject(err) : resolve(r),
    ),
  )
  clearInterval(sampler)
  const after = rssMb(child.pid)
  peak = Math.max(peak, after)
  await sleep(idleSeconds * 1000)
  const settled = rssMb(child.pid)
  return {
    idle_mb: Math.round(idle),
    idle_max_mb: Math.round(idleMax),
    load_peak_mb: Math.round(peak),
    after_load_mb: Math.round(after),
    after_load_idle_mb: Math.round(settled),
    requests: result.requests.total,
    non_2xx: result.non2xx,
    errors: result.errors,
  }
}

async function main() {
  const loads = [load()]
  console.error(`load average at start: ${loads[0]}`)
  // A bare node:http process: what node itself holds here.
  const barePort = await freePort()
  const bare = spawn(
    process.execPath,
    [
      '-e',
      `require('node:http').createServer((q, r) => r.end('{"ok":true}')).listen(${barePort}, '127.0.0.1')`,
    ],
    { stdio: 'ignore' },
  )
  children.add(bare)
  const bareStart = performance.now()
  await untilReady(`http://127.0.0.1:${barePort}/`)
  const rows = {
    'bare node:http': {
      ready_ms: Math.round(performance.now() - bareStart),
      ...(await measure('bare', bare, barePort, { url: `http://127.0.0.1:${barePort}/` })),
    },
  }
  await stop(bare)

  for (const name of SERVICES) {
    const port = await freePort()
    // First start: migrations (and design-archive's first release) go in; not measured.
    const first = start(name, port)
    await untilReady(`http://127.0.0.1:${port}/readyz`, 60_000)
    const target = await targetOf(name, port)
    await stop(first)
    // Measured start: migrations up to date.
    const startedAt = performance.now()
    const child = start(name, port)
    await untilReady(`http://127.0.0.1:${port}/readyz`)
    const readyMs = Math.round(performance.now() - startedAt)
    rows[name] = { ready_ms: readyMs, ...(await measure(name, child, port, target)) }
    await stop(child)
    loads.push(load())
  }

  const out = {
    when: new Date().toISOString(),
    node: process.version,
    node_flags: nodeFlags,
    redis: Boolean(REDIS_URL),
    load_seconds: loadSeconds,
    idle_seconds: idleSeconds,
    load_average_1_5_15: loads,
    results: rows,
  }
  console.log(JSON.stringify(out, null, 2))
  console.log(
    `\n| process | ready ms | idle RSS MB (${idleSeconds} s after ready) | idle max MB | peak RSS MB under load | RSS MB right after | RSS MB ${idleSeconds} s after | requests (non-2xx) |\n|---|---:|---:|---:|---:|---:|---:|---:|`,
  )
  for (const [name, r] of Object.entries(rows))
    console.log(
      `| ${name} | ${r.ready_ms} | ${r.idle_mb} | ${r.idle_max_mb} | ${r.load_peak_mb} | ${r.after_load_mb} | ${r.after_load_idle_mb} | ${r.requests} (${r.non_2xx}) |`,
    )
  console.log(`\nload average (1/5/15 min) at the start and after each service: ${loads.join(' → ')}`)
}

try {
  await main()
} finally {
  await Promise.all([...children].map(stop))
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 })
  for (const name of SERVICES)
    await pool.query(`DROP SCHEMA IF EXISTS "${schemaOf(name)}" CASCADE`).catch(() => {})
  await pool.end()
  rmSync(work, { recursive: true, force: true })
}
