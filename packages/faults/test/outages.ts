import type { Kit } from '../src/kits/common.ts'
import {
  buildKits,
  type Fault,
  type OutageRun,
  outageFindings,
  outageUnderLoad,
  summarize,
} from '../src/scenario.ts'
import { SERVICE_NAMES, type ServiceName } from '../src/service-process.ts'
import { type FaultStack, startFaultStack } from '../src/stack.ts'
import { writeSummary } from './summary.ts'

/** Short outages keep the suite at a few minutes; long enough for every deadline to show. */
const OUTAGE_MS = 5000

const TITLES = { postgres: 'Postgres', redis: 'Redis' } as const

const EXPECTATION = {
  postgres: 'what needs it answers 503 + Retry-After within the budget, and all recovers without a restart',
  redis:
    'it keeps serving what does not need Redis, the rest is a fast 503 + Retry-After, and all recovers without a restart',
} as const

/**
 * One file's worth of outage tests: the four services under a trickle of load while the
 * dependency is stopped (then started again), then frozen (then thawed); then per service the
 * issue's rules for each run, and the data invariants after both.
 */
export function describeOutages(dependency: 'postgres' | 'redis'): void {
  const title = TITLES[dependency]
  describe(`${title} stopped, then frozen, under load`, () => {
    let stack: FaultStack
    let kits: Kit[]
    let stopped: OutageRun
    let frozen: OutageRun
    const kit = (name: ServiceName) => kits.find((k) => k.name === name)!

    beforeAll(async () => {
      stack = await startFaultStack(dependency)
      kits = await buildKits(stack)
      const target = stack[dependency]
      const stop: Fault = {
        // Postgres: an immediate stop (a crash as clients see it). Redis: killed, so it comes
        // back empty, as a restarted cache node does.
        apply: () => target.stop(),
        revert: async () => {
          if (!target.pid) await target.start()
        },
      }
      const freeze: Fault = { apply: () => target.freeze(), revert: () => target.thaw() }
      stopped = await outageUnderLoad(kits, stop, OUTAGE_MS)
      frozen = await outageUnderLoad(kits, freeze, OUTAGE_MS)
      writeSummary(dependency, [
        [`${title} stopped`, kits.map((k) => summarize(stopped, k))],
        [`${title} frozen`, kits.map((k) => summarize(frozen, k))],
      ])
    })

    afterAll(async () => {
      await stack?.close()
    })

    describe.each(SERVICE_NAMES)('%s', (name) => {
      it(`when ${title} is stopped, then ${EXPECTATION[dependency]}`, () => {
        outageFindings(stopped, kit(name), dependency).assertNone(`${name}, ${title} stopped`)
      })

      it(`when ${title} is frozen, then ${EXPECTATION[dependency]}`, () => {
        outageFindings(frozen, kit(name), dependency).assertNone(`${name}, ${title} frozen`)
      })

      it('after both outages, every acknowledged write is stored and the counters equal the rows', async () => {
        // A service that died in an outage fails the outage test; its data is checked all the same.
        if (!kit(name).service.running) await kit(name).service.start()
        expect(await kit(name).invariants()).toEqual([])
      })
    })
  })
}
