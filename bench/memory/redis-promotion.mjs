#!/usr/bin/env node
// What core's Redis group commit leaves for the old generation (issue 17, item 3; the ioredis
// patch in patches/, README.md "Redis commands that reach the old generation"). Two child processes, one after the
// other, each run 50 "requests" in a loop for --seconds: every request makes ~8 KB of garbage,
// then two hits, each answered through one group-committed command (core's hitWindow):
//
//   core kv      RedisKeyValueStore.hitWindow, through ioredis as installed (patched)
//   raw socket   the same hits, the same Lua script, written to a plain net.Socket and the
//                replies split by hand: the baseline for what a Redis round trip must cost
//
// Each child runs with --trace-gc-nvp; the table gives the bytes promoted (moved from the young
// to the old generation) per request, and the young collections. Objects that are promoted and
// then die stay in the old generation until the next full GC, so promoted bytes per request is
// what a service's RSS grows by under load. Measured here: without the patch core kv promoted
// 19× the baseline on Node 20 and 70× on Node 24 (each command's arguments, RESP text and
// reply); with it, 4-6× (BENCHMARKS.md, "Runtime settings").
//
//   REDIS_URL=redis://127.0.0.1:6379 node bench/memory/redis-promotion.mjs [--seconds 5]
import { spawnSync } from 'node:child_process'
import { loadavg } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const argOf = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1] : fallback
}
const seconds = Number(argOf('seconds', 5))
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

if (process.argv[2] === 'child') await child(process.argv[3])
else main()

function main() {
  const before = loadavg()
  const rows = []
  for (const mode of ['raw socket', 'core kv']) {
    const run = spawnSync(
      process.execPath,
      [
        // core is TypeScript: tsx loads it, as the tests do.
        '--import',
        pathToFileURL(path.join(root, 'node_modules/tsx/dist/loader.mjs')).href,
        '--trace-gc',
        '--trace-gc-nvp',
        fileURLToPath(import.meta.url),
        'child',
        mode,
      ],
      { env: { ...process.env, REDIS_URL, BENCH_SECONDS: String(seconds) }, encoding: 'utf8' },
    )
    if (run.status !== 0) throw new Error(`${mode} failed:\n${run.stderr}\n${run.stdout.slice(-2000)}`)
    let promoted = 0
    let scavenges = 0
    for (const line of run.stdout.split('\n')) {
      if (!/ gc=s /.test(line)) continue
      scavenges++
      promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0)
    }
    const result = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{"requests"')))
    rows.push({ mode, ...result, scavenges, promotedBytesPerRequest: Math.round(promoted / result.requests) })
  }
  console.log(`node ${process.version}, ${seconds} s each, 50 requests at a time`)
  console.log(
    '\n| client | requests | commands | young GCs | bytes promoted per request |\n|---|---:|---:|---:|---:|',
  )
  for (const r of rows)
    console.log(
      `| ${r.mode} | ${r.requests} | ${r.commands} | ${r.scavenges} | ${r.promotedBytesPerRequest} |`,
    )
  const [raw, kv] = rows
  console.log(
    `\ncore kv / raw socket: ${(kv.promotedBytesPerRequest / Math.max(1, raw.promotedBytesPerRequest)).toFixed(1)}×`,
  )
  console.log(`load average (1 min): ${before[0].toFixed(2)} → ${loadavg()[0].toFixed(2)}`)
}

async function child(mode) {
  const { createRequire } = await import('node:module')
  const require = createRequire(path.join(root, 'packages/core/package.json'))
  const prefix = `promotion${process.pid}:`
  let hit
  let commands = 0
  let close
  if (mode === 'core kv') {
    const { RedisKeyValueStore } = await import(
      pathToFileURL(path.join(root, 'packages/core/src/kv.ts')).href
    )
    const kv = RedisKeyValueStore.connect(process.env.REDIS_URL, prefix)
    await kv.ping()
    const redis = kv.redis
    const send = redis.sendCommand.bind(redis)
    redis.sendCommand = (command, stream) => {
      if (/^eval/.test(command.name)) commands++
      return send(command, stream)
    }
    hit = (key, reads) => kv.hitWindow(key, 1, 60_000, reads)
    close = () => kv.close()
  } else {
    const net = require('node:net')
    const url = new URL(process.env.REDIS_URL)
    const socket = net.connect(Number(url.port || 6379), url.hostname)
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    // INCR each counter and read its reads, one reply line per value: enough to stand for
    // HIT_WINDOWS (core's script) in what goes over the wire and comes back.
    const lua =
      "local out = {} local k = 1 for n in string.gmatch(ARGV[1], '(%d+)') do out[#out + 1] = redis.call('INCR', KEYS[k]) for i = 1, tonumber(n) do out[#out + 1] = redis.call('GET', KEYS[k + i]) or '' end k = k + 1 + tonumber(n) end return out"
    let pending = []
    let inFlight = null
    let text = ''
    const sendPending = () => {
      if (inFlight || pending.length === 0) return
      inFlight = pending
      pending = []
      commands++
      const keys = []
      for (const h of inFlight) keys.push(prefix + h.key, ...h.reads.map((r) => prefix + r))
      const args = ['EVAL', lua, String(keys.length), ...keys, inFlight.map((h) => h.reads.length).join(' ')]
      let out = `*${args.length}\r\n`
      for (const a of args) out += `$${Buffer.byteLength(a)}\r\n${a}\r\n`
      socket.write(out)
    }
    socket.on('data', (chunk) => {
      text += chunk.toString()
      const lines = text.split('\r\n')
      const count = Number(/^\*(\d+)/.exec(text)?.[1] ?? -1)
      // Each element is one line (":n") or two ("$len", value); wait for the whole array.
      let need = 1
      for (let i = 1, seen = 0; seen < count; seen++) {
        if (i >= lines.length - 1) return
        const step = lines[i].startsWith('$') && lines[i] !== '$-1' ? 2 : 1
        i += step
        need = i
      }
      if (lines.length - 1 < need) return
      text = ''
      const batch = inFlight
      inFlight = null
      let at = 1
      for (const h of batch) {
        const count = Number(lines[at].slice(1))
        at++
        const values = []
        for (let i = 0; i < h.reads.length; i++) {
          if (lines[at].startsWith('$')) {
            values.push(lines[at + 1])
            at += 2
          } else {
            values.push(null)
            at++
          }
        }
        h.resolve({ count, ttlMs: 60_000, values })
      }
      sendPending()
    })
    hit = (key, reads) =>
      new Promise((resolve) => {
        pending.push({ key, reads, resolve })
        if (!inFlight && pending.length === 1) queueMicrotask(sendPending)
      })
    close = () => socket.end()
  }

  const until = Date.now() + Number(process.env.BENCH_SECONDS) * 1000
  let requests = 0
  const request = async (i) => {
    while (Date.now() < until) {
      // What a request makes besides its kv calls (parsing, headers, its answer): ~8 KB.
      let garbage = []
      for (let j = 0; j < 100; j++) garbage.push({ j, text: `header-${j}` })
      await hit(`rl:failures:10.0.${i}.1`, ['token:all', `token:${i}`])
      garbage = []
      for (let j = 0; j < 100; j++) garbage.push({ j, text: `body-${j}` })
      await hit(`rl:credential:${i}`, [])
      requests++
    }
  }
  await Promise.all(Array.from({ length: 50 }, (_, i) => request(i)))
  console.log(JSON.stringify({ requests, commands }))
  await close()
}
