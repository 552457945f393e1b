import path from 'node:path'
import { SERVICE_NAMES } from '@quartet/faults/service-process'
import { type FaultStack, startFaultStack } from '@quartet/faults/stack'
import { type Fixtures, makeFixtures } from '../src/fixtures.ts'
import { fuzz, parseStreams } from '../src/run.ts'
import { parseSeed } from '../src/seed.ts'

/** The fixed seed CI runs; FUZZ_SEED picks another or `random`, FUZZ_RUNS a longer run (README). */
const { seed: SEED, random: RANDOM_SEED } = parseSeed(process.env.FUZZ_SEED)
const RUNS = Number(process.env.FUZZ_RUNS ?? 5400)
const STREAMS = parseStreams(process.env.FUZZ_STREAMS)
const PATH = process.env.FUZZ_PATH || undefined
const TIMEOUT_MS = Number(process.env.FUZZ_TIMEOUT_MS ?? 15_000)
const SURVEY = process.env.FUZZ_SURVEY === '1'
// The CI seed takes about 2.5 minutes; a longer run (FUZZ_RUNS) gets the time it needs.
const TEST_TIMEOUT_MS = Math.max(900_000, RUNS * 200)
const LOG_DIR = path.join(__dirname, '..', 'logs')
/** The whole run again, a random seed included: what a failure's report starts with. */
const REPLAY = `FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}${process.env.FUZZ_STREAMS ? ` FUZZ_STREAMS=${process.env.FUZZ_STREAMS}` : ''} pnpm --filter @quartet/fuzz test`

// Limits that would turn most generated requests into 429s are raised: the suite is about
// what reaches the handlers. The limits themselves have their own tests in each app.
const ENV = {
  'key-info': { KEY_RATE_LIMIT_PER_MINUTE: '1000000' },
  'dns-manager': {
    RATE_LIMIT_PER_MINUTE: '1000000',
    AUTH_FAILURES_PER_ADDRESS: '1000000',
    AUTH_FAILURES_PER_KEY: '1000000',
    MAX_API_KEYS: '100',
  },
  'pickup-share': { UPLOAD_PERMISSIONS_PER_ADDRESS: '1000000', UPLOAD_PERMISSIONS_GLOBAL: '1000000' },
}

let stack: FaultStack | undefined
let fixtures: Fixtures

beforeAll(async () => {
  if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('FUZZ_RUNS must be an integer ≥ 1')
  console.log(
    `fuzz: seed ${SEED}${RANDOM_SEED ? ' (chosen at random)' : ''}, ${RUNS} runs, streams ${STREAMS.join(', ')}${PATH ? `, path ${PATH}` : ''}\n` +
      `fuzz: this run again: ${REPLAY}`,
  )
  const t0 = performance.now()
  stack = await startFaultStack('fuzz', SERVICE_NAMES, {
    env: ENV,
    logDir: LOG_DIR,
    sandboxPrefix: 'quartet-fuzz-',
  })
  console.log(`fuzz: stack up in ${Math.round(performance.now() - t0)} ms`)
  const started = performance.now()
  fixtures = await makeFixtures(stack)
  console.log(`fuzz: setup ${Math.round(performance.now() - started)} ms`)
}, 180_000)

afterAll(async () => {
  await stack?.close()
})

test(
  'when mutated requests reach every operation of the four services, then none is a 5xx, an error outside the envelope, a reset or a crash',
  async () => {
    const results = await fuzz(stack!, fixtures, {
      seed: SEED,
      runs: RUNS,
      streams: STREAMS,
      ...(PATH ? { path: PATH } : {}),
      timeoutMs: TIMEOUT_MS,
      // Each stream may use the test’s time but two minutes, kept for the summary and the checks.
      timeLimitMs: TEST_TIMEOUT_MS - 120_000,
      logDir: LOG_DIR,
      survey: SURVEY,
    })
    const failures = results.flatMap((r) => (r.failure ? [r.failure] : []))
    if (failures.length) throw new Error(`seed ${SEED} (${REPLAY})\n\n${failures.join('\n\n')}`)
    for (const name of SERVICE_NAMES)
      if (!stack!.services[name].running)
        throw new Error(
          `${name} is no longer running (seed ${SEED}: ${REPLAY})\n${stack!.services[name].tail()}`,
        )
    // fast-check stops a stream at the time limit without a failure: that is a run not made.
    const short = results.filter((r) => r.sent < r.runs)
    if (!PATH && short.length)
      throw new Error(
        [
          `seed ${SEED} (${REPLAY})`,
          ...short.map(
            (r) =>
              `${r.stream}: ${r.sent} of ${r.runs} requests sent in ${Math.round((r.elapsedMs ?? 0) / 1000)} s`,
          ),
        ].join('\n'),
      )
  },
  TEST_TIMEOUT_MS,
)
