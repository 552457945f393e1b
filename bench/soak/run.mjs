#!/usr/bin/env node
// Soak (issue 24 item 5): the four built services under steady mixed load for SOAK_MINUTES
// (default 30), each against a Postgres cluster and a Redis the run makes and removes itself
// (packages/faults), with every service's RSS and V8 heap sampled every SOAK_SAMPLE_SECONDS
// (default 10). Prints a table for BENCHMARKS.md and writes bench/soak/results.json.
//
//   pnpm turbo run build --filter=./apps/*
//   node bench/soak/run.mjs                        # SOAK_MINUTES=2 for a quick look
//
// SOAK_RATE_FACTOR (default 1) speeds up the fault suite's trickle (about 15 requests/s per
// service at 1): a soak measures memory at a load the services keep up with; on a busy 2-core
// machine a factor of 2 already saturated dns-manager's connection pool, which measures overload.
// After the load the services idle SOAK_COOLDOWN_SECONDS (30) and are sampled once more: memory
// the load held comes back, a leak does not. SOAK_HEAP_SNAPSHOTS=1 writes a heap snapshot of
// each service a third of the way in and at the end (bench/soak/heap/), to compare in Chrome
// DevTools when memory grows.
import { spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const child = spawn(
  process.execPath,
  [path.join(root, 'node_modules/tsx/dist/cli.mjs'), path.join(root, 'packages/faults/src/soak.ts')],
  { stdio: 'inherit', env: process.env },
)
process.on('SIGINT', () => child.kill('SIGINT'))
child.on('exit', (code) => process.exit(code ?? 1))
