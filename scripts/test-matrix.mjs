#!/usr/bin/env node
// Every package's jest suite, once, on the Node.js major the images run (24, see
// infra/docker/Dockerfile, fetched by scripts/node-runtime.mjs), and the unit and integration
// suites of core and the four apps again on the engines floor (the Node running this script: 20
// on CI's machines). What runs where, and why, is in the README's "Tests" section.
//
// Phase 1 runs six lanes, three at a time (QUARTET_TEST_LANES); a lane is one `turbo run test
// --only --concurrency=1` over some packages, whose time is mostly waiting (services starting,
// browsers, timeouts), so three at once take far less than three in a row. Lanes cannot meet: each has its own database on
// the same server (every test file migrates a schema of its own, but the stack and fuzz suites
// use the services' fixed schemas and need theirs to themselves) and its own Redis logical
// database; builds are done before (`--only`: no lane rebuilds what another runs).
//   - pickup-share without its browser suites, on Node 24 (its suite alone is as long as the rest)
//   - pickup-share's browser suites, on Node 24 (a lane of their own: each is a long wait for
//     Chromium, which beside the rest of the suite made this lane the last by minutes)
//   - core, web-pages, design-archive, key-info and dns-manager, browser suites included, on Node 24
//   - the launcher, Caddy, replica, fresh-clone and fuzz suites, on Node 24
//   - the same two app lanes without the browser suites on Node 20
// Phase 2: the fault suite, alone (its assertions are latency budgets: beside a lane they would
// measure the neighbour). Phase 3: the container test, alone (its image builds load the machine;
// its services run the images' own Node, so it runs once).
//
//   QUARTET_TEST_NODES=20,24   majors (default: this node's major and 24); the newest gets the
//                              whole suite, the others the floor lane; one major: everything on it
//   QUARTET_TEST_SERIAL=1      lanes one after the other
//   QUARTET_TEST_PLAN=1        print the lanes and their commands, run nothing
//   extra arguments go to turbo (e.g. --filter=@quartet/core) and run that selection on each major
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { ensureNode } from './node-runtime.mjs'

const current = Number(process.versions.node.split('.')[0])
const majors = [
  ...new Set((process.env.QUARTET_TEST_NODES ?? `${current},24`).split(',').map((m) => Number(m.trim()))),
].sort((a, b) => b - a)
const [image, ...floors] = majors
const serial = process.env.QUARTET_TEST_SERIAL === '1'
const turboArgs = process.argv.slice(2)
const planOnly = process.env.QUARTET_TEST_PLAN === '1'

/** pickup-share's suite is as long as the other apps' and core's together: a lane of its own. */
const SHARE = ['--filter=@quartet/pickup-share']
const OTHERS = [
  '@quartet/core',
  '@quartet/web-pages',
  '@quartet/design-archive',
  '@quartet/key-info',
  '@quartet/dns-manager',
].map((f) => `--filter=${f}`)
const STACK = ['@quartet/stack', '@quartet/fuzz', '@quartet/deploy'].map((f) => `--filter=${f}`)
const BROWSER_SUITES = '--testPathIgnorePatterns=/test/browser/'
const ONLY_BROWSER_SUITES = '--testPathPatterns=/test/browser/'

/**
 * The environment of a lane: its Node first on PATH and, for a lane beside others (`own` > 0),
 * a database of its own, made fresh so schemas an earlier run left behind cannot matter, and
 * Redis logical database `own`. Lanes that run alone keep the configured ones.
 */
function laneEnv(lane, own) {
  const env = { ...process.env, QUARTET_TEST_NODE: String(lane.major) }
  env.PATH = `${dirname(ensureNode(lane.major))}:${process.env.PATH}`
  if (!own) return env
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL)
    const db = `${url.pathname.slice(1) || 'postgres'}_${lane.name}`
    url.pathname = `/${db}`
    env.DATABASE_URL = url.toString()
    if (!planOnly)
      for (const sql of [`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`, `CREATE DATABASE "${db}"`])
        execFileSync('psql', [process.env.DATABASE_URL, '-qc', sql], {
          stdio: 'inherit',
          env: { ...process.env, PGOPTIONS: '--client-min-messages=warning' },
        })
  }
  if (process.env.REDIS_URL) {
    const url = new URL(process.env.REDIS_URL)
    url.pathname = `/${own}`
    env.REDIS_URL = url.toString()
  }
  return env
}

/**
 * Every workspace package with a `test` script must be in a lane: a new package left out of the
 * lists above would otherwise pass CI untested.
 */
function assertEveryPackageRuns(phases) {
  const named = new Set(
    phases
      .flatMap((p) => p.lanes.flatMap((l) => l.args.filter((a) => a.startsWith('--filter=@'))))
      .map((a) => a.slice(9)),
  )
  const root = join(dirname(new URL(import.meta.url).pathname), '..')
  const missing = []
  // The workspace's entries (pnpm-workspace.yaml): `group/*` or a directory.
  const entries = readFileSync(join(root, 'pnpm-workspace.yaml'), 'utf8')
    .split('\n')
    .map((line) => /^\s*-\s*['"]?([^'"\s]+)/.exec(line)?.[1])
    .filter(Boolean)
  const dirs = entries.flatMap((entry) =>
    entry.endsWith('/*')
      ? readdirSync(join(root, entry.slice(0, -2))).map((d) => join(root, entry.slice(0, -2), d))
      : [join(root, entry)],
  )
  for (const dir of dirs) {
    const file = join(dir, 'package.json')
    if (!existsSync(file)) continue
    const pkg = JSON.parse(readFileSync(file, 'utf8'))
    if (pkg.scripts?.test && !named.has(pkg.name)) missing.push(pkg.name)
  }
  if (missing.length)
    throw new Error(
      `test matrix: ${missing.join(', ')} ha${missing.length > 1 ? 've' : 's'} a test script but no lane (scripts/test-matrix.mjs)`,
    )
}

/** Phases of lanes: [{ together, lanes: [{ name, major, args }] }]. */
function plan() {
  if (turboArgs.length)
    return [
      {
        together: !serial,
        lanes: majors.map((major) => ({ name: `node${major}`, major, args: turboArgs })),
      },
    ]
  const phase1 = [
    { name: `node${image}_share`, major: image, args: [...SHARE, '--', BROWSER_SUITES] },
    { name: `node${image}_share_browser`, major: image, args: [...SHARE, '--', ONLY_BROWSER_SUITES] },
    { name: `node${image}`, major: image, args: OTHERS },
    { name: `node${image}_stack`, major: image, args: STACK },
    ...floors.flatMap((major) => [
      { name: `node${major}_share`, major, args: [...SHARE, '--', BROWSER_SUITES] },
      { name: `node${major}`, major, args: [...OTHERS, '--', BROWSER_SUITES] },
    ]),
  ]
  return [
    { together: !serial, lanes: phase1 },
    {
      together: false,
      lanes: [{ name: `node${image}_faults`, major: image, args: ['--filter=@quartet/faults'] }],
    },
    {
      together: false,
      lanes: [{ name: `node${image}_containers`, major: image, args: ['--filter=@quartet/containers'] }],
    },
  ]
}

/** Jest's summary line when a test failed, after turbo's `package:task:` prefix. */
const JEST_FAILED = /(?:^|:\s)Tests:\s+\d+ failed/
// eslint-disable-next-line no-control-regex
const COLOURS = /\x1b\[[0-9;]*m/g

function runLane(lane, env) {
  const tag = `[${lane.name}] `
  const started = Date.now()
  return new Promise((resolve) => {
    const child = spawn('pnpm', ['exec', 'turbo', 'run', 'test', '--only', '--concurrency=1', ...lane.args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    // A lane whose jest said a test failed has failed, whatever its exit code: turbo stopped by
    // a signal has exited 0 with failures printed.
    let failedTests = false
    const print = (line) => {
      if (JEST_FAILED.test(line.replace(COLOURS, ''))) failedTests = true
      process.stdout.write(tag + line + '\n')
    }
    for (const stream of [child.stdout, child.stderr]) {
      let pending = ''
      stream.on('data', (chunk) => {
        pending += chunk
        const lines = pending.split('\n')
        pending = lines.pop()
        for (const line of lines) print(line)
      })
      stream.on('end', () => pending && print(pending))
    }
    child.on('close', (code, signal) => {
      const minutes = ((Date.now() - started) / 60_000).toFixed(1)
      const ok = code === 0 && !failedTests
      const detail = signal ?? (code === 0 && failedTests ? 'jest reported failed tests' : `exit ${code}`)
      resolve({ lane, ok, detail, minutes })
    })
  })
}

const phases = plan()
if (!turboArgs.length) assertEveryPackageRuns(phases)
for (const phase of phases)
  phase.lanes.forEach((lane, index) => {
    lane.env = laneEnv(lane, phase.together ? index : 0)
    const version = execFileSync('node', ['--version'], { env: lane.env, encoding: 'utf8' }).trim()
    const db = lane.env.DATABASE_URL ? `, ${new URL(lane.env.DATABASE_URL).pathname}` : ''
    console.log(`test matrix: ${lane.name} → Node ${version}${db}: ${lane.args.join(' ')}`)
  })
if (planOnly) process.exit(0)

const started = Date.now()
const results = []
/**
 * How many lanes of a phase run at once (QUARTET_TEST_LANES, default 3): on 2 cores, six lanes at
 * once took as long in all as three at a time, and gave each test a sixth of the machine, which
 * time-bound cases (deadlines, expiries, races) met as failures on a slow day.
 */
const atOnce = Math.max(1, Number(process.env.QUARTET_TEST_LANES ?? 3))

/** Runs `lanes` at most `atOnce` at a time, in order; a lane starts when another ends. */
async function runTogether(lanes) {
  const done = []
  let next = 0
  const worker = async () => {
    while (next < lanes.length) {
      const lane = lanes[next++]
      done.push(await runLane(lane, lane.env))
    }
  }
  await Promise.all(Array.from({ length: Math.min(atOnce, lanes.length) }, worker))
  return done
}

for (const phase of phases) {
  if (phase.together) results.push(...(await runTogether(phase.lanes)))
  else for (const lane of phase.lanes) results.push(await runLane(lane, lane.env))
  if (!results.every((r) => r.ok)) break
}

for (const r of results)
  console.log(`test matrix: ${r.lane.name} ${r.ok ? 'passed' : `FAILED (${r.detail})`} in ${r.minutes} min`)
console.log(`test matrix: ${((Date.now() - started) / 60_000).toFixed(1)} min in all`)
process.exit(results.every((r) => r.ok) ? 0 : 1)
