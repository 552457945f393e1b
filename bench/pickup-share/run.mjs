#!/usr/bin/env node
// pickup-share vs nginx: download throughput of one 100 MB file, same machine, same run, same bytes.
//
//   node bench/pickup-share/run.mjs            (from the repository root)
//
// Starts the built service (apps/pickup-share/dist/main.js; built if missing) against Postgres
// (DATABASE_URL, default postgresql://postgres@127.0.0.1:5432/postgres, schema
// pickup_share_bench) with a temporary blob folder. It uploads a 100 MB random file through the
// public API (POST /api/upload, PUT /api/blob/upload, POST /api/share) and writes the same bytes
// to a folder that Debian's nginx serves (sendfile on). Then it downloads the file from both in
// rounds; within a round, batches of BENCH_PARALLEL downloads alternate between the two servers
// (BENCH_DOWNLOADS batches each). Every service download is a real counted download
// (GET /api/download: reservation in kv + Postgres, Content-Disposition, streamed from disk).
// Prints the median MB/s of each and the median per-round ratio service/nginx, and writes
// results.json here.
//
// Knobs: BENCH_ROUNDS (5), BENCH_DOWNLOADS (8), BENCH_PARALLEL (2), BENCH_SIZE_MB (100),
// NGINX_WORKERS (1: one nginx worker against one Node process), NGINX (binary, default nginx),
// BENCH_SERVICE_NODE (the node binary that runs the service, default the one running this
// script; the downloading client stays on this one).
import { spawn, spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import {
  chmodSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { get, request } from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '../free-port.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const repoRoot = path.resolve(here, '..', '..')
const appDir = path.join(repoRoot, 'apps', 'pickup-share')

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const DOWNLOADS = Number(process.env.BENCH_DOWNLOADS ?? 8)
const PARALLEL = Number(process.env.BENCH_PARALLEL ?? 2)
const SIZE = Number(process.env.BENCH_SIZE_MB ?? 100) * 1024 * 1024
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
const work = mkdtempSync(path.join(os.tmpdir(), 'pickup-share-bench-'))
const cleanup = () => {
  for (const c of children) c.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
process.on('exit', cleanup)
process.on('SIGINT', () => process.exit(130))

// --- the file ------------------------------------------------------------------------------
const root = path.join(work, 'www')
mkdirSync(root, { recursive: true })
const filePath = path.join(root, 'big.bin')
const data = randomBytes(SIZE)
writeFileSync(filePath, data)
const digest = createHash('sha256').update(data).digest('hex')
for (const dir of [work, root]) chmodSync(dir, 0o755)

// --- the service ---------------------------------------------------------------------------
if (!existsSync(path.join(appDir, 'dist', 'main.js'))) {
  const built = spawnSync('pnpm', ['--filter', '@quartet/pickup-share', 'build'], {
    cwd: repoRoot,
    stdio: 'inherit',
  })
  if (built.status !== 0) throw new Error('build failed')
}
const servicePort = await freePort()
const serviceNode = process.env.BENCH_SERVICE_NODE || process.execPath
const service = spawn(serviceNode, [path.join(appDir, 'dist', 'main.js')], {
  cwd: appDir,
  env: {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    DATABASE_URL,
    DATABASE_SCHEMA: 'pickup_share_bench',
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
    PORT: String(servicePort),
    HOST: '127.0.0.1',
    BLOB_DIR: path.join(work, 'blobs'),
    UPLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
    SWEEP_INTERVAL_SECONDS: '0',
    // nginx below runs with access_log off; neither side writes a line per request.
    LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
})
children.push(service)
const serviceUrl = `http://127.0.0.1:${servicePort}`
await waitFor(`${serviceUrl}/readyz`)

async function postJson(p, body) {
  const res = await fetch(`${serviceUrl}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const json = await res.json()
  if (!res.ok) throw new Error(`${p}: ${JSON.stringify(json)}`)
  return json
}

/** Upload through the API exactly as a browser would, share it, and return a download URL. */
async function newShare(maxDownloads) {
  const grant = await postJson('/api/upload', {
    store: 'blob',
    name: 'big.bin',
    size: SIZE,
    type: 'application/octet-stream',
  })
  const status = await new Promise((resolve, reject) => {
    const req = request(
      new URL(grant.upload.url, serviceUrl),
      { method: 'PUT', headers: grant.upload.headers },
      (res) => {
        res.resume()
        resolve(res.statusCode)
      },
    )
    req.on('error', reject)
    createReadStream(filePath).pipe(req)
  })
  if (status !== 201) throw new Error(`blob upload answered ${status}`)
  const { code } = await postJson('/api/share', {
    files: [
      {
        name: 'big.bin',
        size: SIZE,
        type: 'application/octet-stream',
        pathname: grant.pathname,
        store: 'blob',
        proof: grant.proof,
      },
    ],
    maxDownloads,
  })
  return `${serviceUrl}/api/download?code=${code}&path=${encodeURIComponent(grant.pathname)}`
}

// --- nginx ---------------------------------------------------------------------------------
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
  default_type application/octet-stream;
  client_body_temp_path ${work}/tmp-body;
  proxy_temp_path ${work}/tmp-proxy;
  fastcgi_temp_path ${work}/tmp-fastcgi;
  uwsgi_temp_path ${work}/tmp-uwsgi;
  scgi_temp_path ${work}/tmp-scgi;
  server {
    listen 127.0.0.1:${nginxPort};
    root ${root};
    location / {
      add_header Content-Disposition "attachment; filename=big.bin";
      add_header Cache-Control "no-store";
      add_header X-Content-Type-Options "nosniff";
    }
  }
}
`,
)
const nginx = spawn(NGINX, ['-c', conf, '-p', work, '-e', path.join(work, 'error.log')], { stdio: 'inherit' })
children.push(nginx)
const nginxUrl = `http://127.0.0.1:${nginxPort}/big.bin`
await waitFor(nginxUrl)

// --- measurement ---------------------------------------------------------------------------
/** One download, drained; resolves with its byte count (and checks the bytes on the first one). */
function download(url, verify) {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        return reject(new Error(`${url} answered ${res.statusCode}`))
      }
      const hash = verify ? createHash('sha256') : null
      let bytes = 0
      res.on('data', (chunk) => {
        bytes += chunk.length
        hash?.update(chunk)
      })
      res.on('end', () => {
        if (hash && hash.digest('hex') !== digest) return reject(new Error(`${url}: bytes differ`))
        resolve(bytes)
      })
      res.on('error', reject)
    }).on('error', reject)
  })
}

/** One batch of PARALLEL downloads: seconds taken and bytes received. */
async function batch(url) {
  const start = process.hrtime.bigint()
  const sizes = await Promise.all(Array.from({ length: PARALLEL }, () => download(url, false)))
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, bytes: sizes.reduce((a, b) => a + b, 0) }
}

/**
 * MB/s of both servers over DOWNLOADS batches each. Batches interleave (nginx, service, service,
 * nginx, …) so that noise from the machine (2 cores shared by client, nginx and the service)
 * falls on both sides alike.
 */
async function measureBoth(urls) {
  for (const url of Object.values(urls)) await download(url, true) // warm-up, and proof the bytes are the same
  const totals = { nginx: { seconds: 0, bytes: 0 }, service: { seconds: 0, bytes: 0 } }
  for (let i = 0; i < DOWNLOADS; i++) {
    const order = i % 2 === 0 ? ['nginx', 'service'] : ['service', 'nginx']
    for (const who of order) {
      const { seconds, bytes } = await batch(urls[who])
      totals[who].seconds += seconds
      totals[who].bytes += bytes
    }
  }
  const mbps = (t) => t.bytes / 1024 / 1024 / t.seconds
  return { nginx: mbps(totals.nginx), service: mbps(totals.service) }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const rounds = []
for (let r = 0; r < ROUNDS; r++) {
  const shareUrl = await newShare(DOWNLOADS * PARALLEL + 1)
  const result = await measureBoth({ nginx: nginxUrl, service: shareUrl })
  result.ratio = result.service / result.nginx
  rounds.push(result)
  console.log(
    `round ${r + 1}: nginx ${result.nginx.toFixed(0)} MB/s, service ${result.service.toFixed(0)} MB/s, ratio ${result.ratio.toFixed(2)}`,
  )
}

const summary = {
  date: new Date().toISOString(),
  machine: {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    node: process.version,
    service_node: spawnSync(serviceNode, ['--version'], { encoding: 'utf8' }).stdout.trim(),
  },
  sizeMB: SIZE / 1024 / 1024,
  rounds: ROUNDS,
  downloadsPerRound: DOWNLOADS * PARALLEL,
  parallel: PARALLEL,
  nginxWorkers: NGINX_WORKERS,
  medianMBps: { nginx: median(rounds.map((r) => r.nginx)), service: median(rounds.map((r) => r.service)) },
  medianRatio: median(rounds.map((r) => r.ratio)),
  rounds_detail: rounds,
}
writeFileSync(path.join(here, 'results.json'), `${JSON.stringify(summary, null, 2)}\n`)
console.log(`
| download of a ${summary.sizeMB} MB file (${PARALLEL} at a time) | median MB/s |
|---|---|
| nginx (sendfile, ${NGINX_WORKERS} worker) | ${summary.medianMBps.nginx.toFixed(0)} |
| pickup-share GET /api/download (blob store) | ${summary.medianMBps.service.toFixed(0)} |
| **ratio service / nginx (median of per-round ratios)** | **${summary.medianRatio.toFixed(2)}** |`)
process.exit(0)
