import { Pool } from 'undici'
import type { Kit } from '../src/kits/common.ts'
import { CLIENT_TIMEOUT_MS } from '../src/load.ts'
import { sleep, waitFor } from '../src/sandbox.ts'
import { buildKits } from '../src/scenario.ts'
import type { ExitInfo, ServiceName } from '../src/service-process.ts'
import { type FaultStack, startFaultStack } from '../src/stack.ts'

/** The services clients write to (design-archive's writes are operator commands). */
const WRITERS = ['key-info', 'dns-manager', 'pickup-share'] as const satisfies readonly ServiceName[]

interface Outcome {
  exit: ExitInfo
  acknowledgedAtKill: number
  restart: Error | null
}

describe('kill -9 during concurrent writes, then a restart', () => {
  let stack: FaultStack
  let kits: Kit[]
  const outcomes = new Map<ServiceName, Outcome>()

  beforeAll(async () => {
    stack = await startFaultStack('kill', WRITERS)
    kits = await buildKits(stack)
    await Promise.all(
      kits.map(async (kit) => {
        const pool = new Pool(kit.service.url, {
          headersTimeout: CLIENT_TIMEOUT_MS,
          bodyTimeout: CLIENT_TIMEOUT_MS,
        })
        const writes = kit.writeBurst!(pool)
        // Cut at an unplanned moment once writes are flowing.
        await waitFor(`${kit.name} acknowledging writes`, async () => writes.acknowledged() >= 20, 30_000, 20)
        await sleep(Math.random() * 500)
        const acknowledgedAtKill = writes.acknowledged()
        const exit = await kit.service.kill('SIGKILL')
        await writes.stop()
        await pool.destroy()
        let restart: Error | null = null
        await kit.service.start().catch((err: Error) => (restart = err))
        outcomes.set(kit.name, { exit, acknowledgedAtKill, restart })
      }),
    )
  })

  afterAll(async () => {
    await stack?.close()
  })

  it.each(WRITERS)(
    '%s: when it is killed with SIGKILL during concurrent writes and restarted, then every acknowledged write is stored and the counters equal the rows',
    async (name) => {
      const outcome = outcomes.get(name)!
      expect(outcome.exit.signal).toBe('SIGKILL')
      expect(outcome.acknowledgedAtKill).toBeGreaterThan(0)
      expect(outcome.restart).toBeNull()
      expect(await kits.find((k) => k.name === name)!.invariants()).toEqual([])
    },
  )
})
