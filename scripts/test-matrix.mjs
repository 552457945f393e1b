#!/usr/bin/env node
// Every package's jest suite on each Node.js major of the matrix: the one running this script
// (the engines floor, Node 20 on CI's machines) and the one the images run (Node 24, see
// infra/docker/Dockerfile), fetched by scripts/node-runtime.mjs.
//
// The passes run side by side: a pass is one `turbo run test --only --concurrency=1`, whose time
// is mostly spent waiting (services starting, timeouts the fault suite provokes, browsers), so two
// at once take far less than twice one. They cannot meet: each extra pass gets its own database
// on the same server (every test file already migrates its own schema; the stack, replica and
// fuzz suites use the services' fixed schemas, so they need the database to themselves) and its
// own Redis logical database, and builds are done before the passes start (`--only`: no pass
// rebuilds what another is running). The fault suite measures answers against latency budgets
// (a 503 within 1.1 s while Postgres is frozen), so it runs last and alone, one Node after the
// other: beside another pass its budgets would measure the neighbour. The container test
// (@quartet/containers: builds the four images and boots the compose stack in Docker) runs once
// per run, not once per Node: its services run the images' own Node, whichever runs jest. It runs
// last and alone, under the first Node: its image builds beside both passes loaded the machine
// enough that the passes' own deadline tests (a take within 2 s while Redis is frozen) missed.
//
//   QUARTET_TEST_NODES=20,24   majors to run (default: this node's major and 24)
//   QUARTET_TEST_SERIAL=1      one pass after the other
//   extra arguments go to turbo (e.g. --filter=@quartet/core) and replace the two phases by one
import { execFileSync, spawn } from 'node:child_process'
import { dirname } from 'node:path'
import { ensureNode } from './node-runtime.mjs'

const current = Number(process.versions.node.split('.')[0])
const majors = [
  ...new Set((process.env.QUARTET_TEST_NODES ?? `${current},24`).split(',').map((m) => Number(m.trim()))),
]
const serial = process.env.QUARTET_TEST_SERIAL === '1'
const turboArgs = process.argv.slice(2)

function isolated(major, index) {
  const env = { ...process.env, QUARTET_TEST_NODE: String(major) }
  if (index === 0) return env
  const bin = ensureNode(major)
  env.PATH = `${dirname(bin)}:${process.env.PATH}`
  if (process.env.DATABASE_URL) {
    const url = new URL(process.env.DATABASE_URL)
    const name = `${url.pathname.slice(1) || 'postgres'}_node${major}`
    // One database per extra pass, created fresh so schemas an earlier run left behind cannot matter.
    const admin = process.env.DATABASE_URL
    execFileSync('psql', [admin, '-qc', `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`], {
      stdio: 'inherit',
    })
    execFileSync('psql', [admin, '-qc', `CREATE DATABASE "${name}"`], { stdio: 'inherit' })
    url.pathname = `/${name}`
    env.DATABASE_URL = url.toString()
  }
  if (process.env.REDIS_URL) {
    const url = new URL(process.env.REDIS_URL)
    url.pathname = `/${index}`
    env.REDIS_URL = url.toString()
  }
  return env
}

/** Suites whose assertions are timings: never run beside another pass. */
const ALONE = ['@quartet/faults']
/** Suites that run once per run (on the first Node), after the others, alone. */
const ONCE = ['@quartet/containers']

function runPass(major, env, args, label = `node ${major}`) {
  const tag = `[${label}] `
  const started = Date.now()
  return new Promise((resolve) => {
    const child = spawn('pnpm', ['exec', 'turbo', 'run', 'test', '--only', '--concurrency=1', ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    for (const stream of [child.stdout, child.stderr]) {
      let pending = ''
      stream.on('data', (chunk) => {
        pending += chunk
        const lines = pending.split('\n')
        pending = lines.pop()
        for (const line of lines) process.stdout.write(tag + line + '\n')
      })
      stream.on('end', () => pending && process.stdout.write(tag + pending + '\n'))
    }
    child.on('close', (code, signal) => {
      const minutes = ((Date.now() - started) / 60_000).toFixed(1)
      resolve({ major, ok: code === 0, detail: signal ?? `exit ${code}`, minutes, what: args.join(' ') })
    })
  })
}

const passes = majors.map((major, index) => ({ major, env: isolated(major, index) }))
for (const { major, env } of passes) {
  const version = execFileSync('node', ['--version'], { env, encoding: 'utf8' }).trim()
  console.log(
    `test matrix: Node ${major} → ${version}${env.DATABASE_URL ? `, ${new URL(env.DATABASE_URL).pathname}` : ''}`,
  )
}
const phases = turboArgs.length
  ? [{ args: turboArgs, together: !serial }]
  : [
      {
        args: [...ALONE, ...ONCE].map((name) => `--filter=!${name}`),
        together: !serial,
      },
      { args: ALONE.map((name) => `--filter=${name}`), together: false },
      { args: [], together: false, onlyOnce: true, once: ONCE.map((name) => `--filter=${name}`) },
    ]
const results = []
for (const phase of phases) {
  const once = () => runPass(passes[0].major, passes[0].env, phase.once, `once, node ${passes[0].major}`)
  if (phase.together)
    results.push(
      ...(await Promise.all([
        ...passes.map((p) => runPass(p.major, p.env, phase.args)),
        ...(phase.once ? [once()] : []),
      ])),
    )
  else {
    if (!phase.onlyOnce) for (const p of passes) results.push(await runPass(p.major, p.env, phase.args))
    if (phase.once) results.push(await once())
  }
  if (!results.every((r) => r.ok)) break
}

for (const r of results)
  console.log(
    `test matrix: Node ${r.major} [${r.what || 'all'}] ${r.ok ? 'passed' : `FAILED (${r.detail})`} in ${r.minutes} min`,
  )
process.exit(results.every((r) => r.ok) ? 0 : 1)
