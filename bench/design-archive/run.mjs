#!/usr/bin/env node
// design-archive vs nginx, same machine, same run, same bytes.
//
//   node bench/design-archive/run.mjs            (from the repository root)
//
// Starts the built service (apps/design-archive/dist/main.js; built if missing) against Postgres
// (DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/postgres, schema
// design_archive_bench), downloads every document it serves, writes those exact bytes to a
// temporary folder and serves them with Debian's nginx. Then autocannon measures manifest.json
// and the largest document, each with a 200 and a 304 (If-None-Match with that server's own
// ETag), in rounds that alternate between the two servers. Prints a Markdown table of the median
// requests/s, the median per-round ratio service/nginx, and the same for requests per CPU-second
// of the server processes (from /proc: robust when other work shares the machine), and writes
// results.json here. A third server, bare-node.mjs (node:http with nothing but ETag/304), shows
// how close the service gets to what Node itself can do.
//
// Knobs: BENCH_SECONDS (5 per run), BENCH_ROUNDS (3), BENCH_CONNECTIONS (50), NGINX_WORKERS (1: one nginx worker against
// one Node process; "auto" uses every core), NGINX (nginx binary, default nginx on PATH),
// BENCH_SERVICE_NODE (the node binary that runs the service and bare node, default the one
// running this script; autocannon stays on this one, so the client is the same whichever Node
// serves), BENCH_NODE_FLAGS (node flags for the service alone, e.g. "--cpu-prof
// --cpu-prof-dir=/tmp/prof", as bench/dns-manager takes them).
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../free-port.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '..', '..')
const appDir = path.join(repoRoot, 'apps', 'design-archive')
const require = createRequire(path.join(repoRoot, 'package.json'))
const autocannon = require('autocannon')

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const NGINX_WORKERS = process.env.NGINX_WORKERS ?? '1'
const NGINX = process.env.NGINX ?? 'nginx'
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres'

async function waitFor(url, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url)
      if (res.ok) return
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`${url} did not become ready`)
}

const children = []
const work = mkdtempSync(path.join(os.tmpdir(), 'design-bench-'))
function cleanup() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('exit', cleanup)
process.on('SIGINT', () => process.exit(130))

// --- the service ----------------------------------------------------------------------------
if (!existsSync(path.join(appDir, 'dist', 'main.js'))) {
  const built = spawnSync('pnpm', ['--filter', '@quartet/design-archive', 'build'], {
    cwd: repoRoot,
    stdio: 'inherit',
  })
  if (built.status !== 0) throw new Error('build failed')
}
const servicePort = await freePort()
const serviceNode = process.env.BENCH_SERVICE_NODE || process.execPath
const service = spawn(
  serviceNode,
  [...(process.env.BENCH_NODE_FLAGS?.split(' ').filter(Boolean) ?? []), path.join(appDir, 'dist', 'main.js')],
  {
    cwd: appDir,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      DATABASE_URL,
      DATABASE_SCHEMA: 'design_archive_bench',
      PORT: String(servicePort),
      HOST: '127.0.0.1',
      // nginx below runs with access_log off; neither side writes a line per request.
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  },
)
children.push(service)
const serviceUrl = `http://127.0.0.1:${servicePort}`
await waitFor(`${serviceUrl}/readyz`)

// --- the same bytes on disk for nginx -------------------------------------------------------
const root = path.join(work, 'www')
const docDir = path.join(root, 'design-api', 'v1')
mkdirSync(docDir, { recursive: true })
const manifest = await (await fetch(`${serviceUrl}/design-api/v1/manifest.json`)).json()
const names = ['manifest.json', ...manifest.documents.map((d) => d.name)]
for (const name of names) {
  const res = await fetch(`${serviceUrl}/design-api/v1/${name}`, {
    headers: { 'accept-encoding': 'identity' },
  })
  const body = Buffer.from(await res.arrayBuffer())
  if (`"${createHash('sha256').update(body).digest('hex')}"` !== res.headers.get('etag'))
    throw new Error(`${name}: bytes do not match the ETag`)
  writeFileSync(path.join(docDir, name), body)
}
const largest = [...manifest.documents].sort((a, b) => b.bytes - a.bytes)[0]
for (const dir of [work, root, path.join(root, 'design-api'), docDir]) chmodSync(dir, 0o755)

// nginx sends the service's own header lines, so both servers write the same answer: the
// headers the service adds to its 200s and 304s (security headers, CORS, caching) are read off
// its answers and become nginx's add_header lines: plain where the service sends a line with both
// statuses alike, otherwise through a map on $status (an empty value sends nothing). X-Request-Id
// is nginx's own $request_id, Keep-Alive its keepalive_timeout's; Date, Content-Type,
// Content-Length, ETag, Last-Modified and Connection nginx writes itself. Byte ranges are off
// (max_ranges 0), as the service serves none: no Accept-Ranges. Once nginx runs, every measured
// document's 200 and 304 are compared line by line (below): nginx's only extra lines are its
// Server and, on a 304, its Last-Modified, so if anything nginx writes a little more.
const etagAt = async (url) =>
  (await fetch(url, { headers: { 'accept-encoding': 'identity' } })).headers.get('etag')
const keepAlive = new http.Agent({ keepAlive: true })
const NATIVE = new Set(['date', 'content-type', 'content-length', 'etag', 'last-modified', 'connection'])
const OWN = new Set(['x-request-id', 'keep-alive'])
/**
 * The header lines a server answers a document with (a 304 for its own ETag): lower-case name →
 * [name as sent, value]. A name sent twice is refused: the comparison below is by name.
 */
const sentHeaders = async (base, doc, status) => {
  const url = `${base}/design-api/v1/${doc}`
  const headers = status === 304 ? { 'if-none-match': await etagAt(url) } : {}
  const res = await new Promise((resolve, reject) =>
    http
      .get(url, { headers: { ...headers, 'accept-encoding': 'identity' }, agent: keepAlive }, resolve)
      .on('error', reject),
  )
  res.resume()
  if (res.statusCode !== status) throw new Error(`${url} answered ${res.statusCode}, not ${status}`)
  const lines = new Map()
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = res.rawHeaders[i].toLowerCase()
    if (lines.has(name)) throw new Error(`${url} (${status}) sends ${name} twice`)
    lines.set(name, [res.rawHeaders[i], res.rawHeaders[i + 1]])
  }
  return lines
}
const serviceHeaders = {
  200: await sentHeaders(serviceUrl, 'manifest.json', 200),
  304: await sentHeaders(serviceUrl, 'manifest.json', 304),
}
const added = [...new Set([...serviceHeaders[200].keys(), ...serviceHeaders[304].keys()])].filter(
  (name) => !NATIVE.has(name) && !OWN.has(name),
)
// An nginx string: quotes and backslashes escaped; a `$` would start a variable, so none may come.
const nginxValue = (value) => {
  if (value.includes('$')) throw new Error(`a header value with $ cannot be given to nginx as is: ${value}`)
  return `"${value.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
}
const sameOnBoth = (name) => serviceHeaders[200].get(name)?.[1] === serviceHeaders[304].get(name)?.[1]
const headerMaps = added
  .filter((name) => !sameOnBoth(name))
  .map(
    (name) =>
      `  map $status $bench_${name.replaceAll('-', '_')} {\n    default "";\n${[200, 304]
        .filter((status) => serviceHeaders[status].has(name))
        .map((status) => `    ${status} ${nginxValue(serviceHeaders[status].get(name)[1])};\n`)
        .join('')}  }`,
  )
  .join('\n')
const addHeaders = added
  .map((name) => {
    const [sentName, value] = serviceHeaders[200].get(name) ?? serviceHeaders[304].get(name)
    return `      add_header ${sentName} ${sameOnBoth(name) ? nginxValue(value) : `$bench_${name.replaceAll('-', '_')}`};`
  })
  .join('\n')

const nginxPort = await freePort()
const conf = path.join(work, 'nginx.conf')
writeFileSync(
  conf,
  `${process.getuid?.() === 0 ? 'user root;\n' : ''}worker_processes ${NGINX_WORKERS};
daemon off;
pid ${work}/nginx.pid;
error_log ${work}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 5 5;
  max_ranges 0;
  types { application/json json; }
  default_type application/octet-stream;
  charset utf-8;
  charset_types application/json;
  client_body_temp_path ${work}/tmp-body;
  proxy_temp_path ${work}/tmp-proxy;
  fastcgi_temp_path ${work}/tmp-fastcgi;
  uwsgi_temp_path ${work}/tmp-uwsgi;
  scgi_temp_path ${work}/tmp-scgi;
${headerMaps}
  server {
    listen 127.0.0.1:${nginxPort};
    root ${root};
    location /design-api/v1/ {
      etag on;
${addHeaders}
      add_header X-Request-Id $request_id;
    }
  }
}
`,
)
const nginx = spawn(NGINX, ['-c', conf, '-p', work, '-e', path.join(work, 'error.log')], { stdio: 'inherit' })
children.push(nginx)
const nginxUrl = `http://127.0.0.1:${nginxPort}`
await waitFor(`${nginxUrl}/design-api/v1/manifest.json`)
// Line by line, every measured document: the same names with the same values, but for those that
// differ per server or answer (Date, ETag, Last-Modified, X-Request-Id), and nginx's extra lines.
const VARYING = new Set(['date', 'etag', 'last-modified', 'x-request-id'])
for (const doc of ['manifest.json', largest.name]) {
  for (const status of [200, 304]) {
    const lines = (m) =>
      [...m]
        .map(([name, [, value]]) => (VARYING.has(name) ? name : `${name}: ${value}`))
        .sort()
        .join('\n')
    const service = await sentHeaders(serviceUrl, doc, status)
    const nginxHeaders = await sentHeaders(nginxUrl, doc, status)
    nginxHeaders.delete('server')
    if (status === 304) nginxHeaders.delete('last-modified')
    if (lines(nginxHeaders) !== lines(service))
      throw new Error(`${doc} ${status}: nginx sends\n${lines(nginxHeaders)}\nthe service\n${lines(service)}`)
  }
}

const barePort = await freePort()
const bare = spawn(serviceNode, [path.join(here, 'bare-node.mjs'), String(barePort), docDir], {
  stdio: 'inherit',
})
children.push(bare)
const bareUrl = `http://127.0.0.1:${barePort}`
await waitFor(`${bareUrl}/design-api/v1/manifest.json`)

// --- measurements ---------------------------------------------------------------------------
const run = (url, headers, expectStatus) => runFor(url, headers, expectStatus, SECONDS)
const runFor = (url, headers, expectStatus, duration) =>
  new Promise((resolve, reject) => {
    autocannon({ url, connections: CONNECTIONS, duration, headers }, (err, result) => {
      if (err) return reject(err)
      const wrong = Object.entries(result.statusCodeStats ?? {})
        .filter(([code]) => Number(code) !== expectStatus)
        .reduce((n, [, s]) => n + s.count, 0)
      if (wrong > 0 || result.errors > 0 || result.timeouts > 0)
        return reject(
          new Error(
            `${url}: ${wrong} unexpected statuses, ${result.errors} errors, ${result.timeouts} timeouts`,
          ),
        )
      resolve({
        rps: result.requests.average,
        total: result.requests.total,
        p99: result.latency.p99,
        throughputMBs: result.throughput.average / 1e6,
      })
    })
  })

// CPU time (user + system, seconds) of a process and its children, from /proc. Requests per
// CPU-second does not depend on how much of the machine other processes take during a run.
const CLK_TCK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100)
const childPids = (pid) =>
  spawnSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => Number(l.trim()))
    .filter(Boolean)
const cpuSeconds = (pid) => {
  let ticks = 0
  for (const p of [pid, ...childPids(pid)]) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // process gone
    }
  }
  return ticks / CLK_TCK
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const servers = { service: serviceUrl, nginx: nginxUrl, bare: bareUrl }
const pids = { service: service.pid, nginx: nginx.pid, bare: bare.pid }
const cases = []
for (const doc of ['manifest.json', largest.name]) {
  for (const status of [200, 304]) {
    const headers = {}
    for (const [name, base] of Object.entries(servers)) {
      headers[name] = status === 304 ? { 'if-none-match': await etagAt(`${base}/design-api/v1/${doc}`) } : {}
    }
    cases.push({ doc, status, headers })
  }
}
// Warm both servers up (JIT, connection pools) before anything is recorded.
for (const [name, base] of Object.entries(servers)) {
  await runFor(`${base}/design-api/v1/manifest.json`, {}, 200, 2)
  process.stderr.write(`warmed up ${name}\n`)
}
// Rounds interleave the two servers (alternating which goes first), so load from anything else
// on the machine hits both alike; each row reports the median of its rounds.
const results = []
for (const { doc, status, headers } of cases) {
  const samples = { service: [], nginx: [], bare: [] }
  const ratios = []
  const cpuRatios = []
  const bareRatios = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['service', 'nginx', 'bare'] : ['bare', 'nginx', 'service']
    const measured = {}
    for (const name of order) {
      const cpuBefore = cpuSeconds(pids[name])
      measured[name] = await run(`${servers[name]}/design-api/v1/${doc}`, headers[name], status)
      const cpu = cpuSeconds(pids[name]) - cpuBefore
      measured[name].cpuSeconds = cpu
      measured[name].perCpuSecond = cpu > 0 ? measured[name].total / cpu : 0
      samples[name].push(measured[name])
    }
    ratios.push(measured.service.rps / measured.nginx.rps)
    cpuRatios.push(measured.service.perCpuSecond / measured.nginx.perCpuSecond)
    bareRatios.push(measured.service.rps / measured.bare.rps)
    process.stderr.write(
      `${doc} ${status} round ${round + 1}: service ${Math.round(measured.service.rps)}, nginx ${Math.round(measured.nginx.rps)}, bare node ${Math.round(measured.bare.rps)} req/s\n`,
    )
  }
  const summary = (list) => ({
    rps: median(list.map((m) => m.rps)),
    p99: median(list.map((m) => m.p99)),
    perCpuSecond: median(list.map((m) => m.perCpuSecond)),
  })
  results.push({
    document: doc,
    status,
    service: summary(samples.service),
    nginx: summary(samples.nginx),
    ratio: median(ratios),
    ratios,
    cpuRatio: median(cpuRatios),
    cpuRatios,
    bare: summary(samples.bare),
    bareRatio: median(bareRatios),
    bareRatios,
  })
}

const pct = (x) => `${(x * 100).toFixed(0)}%`
const lines = [
  `| document | status | service req/s | nginx req/s | req/s ratio | service req per CPU-s | nginx req per CPU-s | per-CPU-s ratio | bare node req/s | service / bare node | service p99 ms | nginx p99 ms |`,
  `| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |`,
  ...results.map(
    (r) =>
      `| ${r.document}${r.document === largest.name ? ` (${largest.bytes} B)` : ''} | ${r.status} | ${Math.round(r.service.rps)} | ${Math.round(r.nginx.rps)} | ${pct(r.ratio)} | ${Math.round(r.service.perCpuSecond)} | ${Math.round(r.nginx.perCpuSecond)} | ${pct(r.cpuRatio)} | ${Math.round(r.bare.rps)} | ${pct(r.bareRatio)} | ${r.service.p99} | ${r.nginx.p99} |`,
  ),
]
console.log(lines.join('\n'))
writeFileSync(
  path.join(here, 'results.json'),
  `${JSON.stringify(
    {
      measured_at: new Date().toISOString(),
      node: process.version,
      service_node: spawnSync(serviceNode, ['--version'], { encoding: 'utf8' }).stdout.trim(),
      cpus: os.cpus().length,
      seconds: SECONDS,
      rounds: ROUNDS,
      connections: CONNECTIONS,
      nginx_workers: NGINX_WORKERS,
      nginx: spawnSync(NGINX, ['-v'], { encoding: 'utf8' }).stderr.trim(),
      results,
    },
    null,
    2,
  )}\n`,
)
process.exit(0)
