import { Findings, checkShutdown } from '../src/expect.ts'
import { KeepAliveLoad } from '../src/keepalive.ts'
import type { Kit } from '../src/kits/common.ts'
import { sleep } from '../src/sandbox.ts'
import { buildKits } from '../src/scenario.ts'
import { exitWithin, SERVICE_NAMES } from '../src/service-process.ts'
import { type FaultStack, SHUTDOWN_DELAY_MS, SHUTDOWN_TIMEOUT_MS, startFaultStack } from '../src/stack.ts'

describe('SIGTERM under keep-alive load (a rolling update)', () => {
  let stack: FaultStack
  let kits: Kit[]

  beforeAll(async () => {
    stack = await startFaultStack('sigterm')
    kits = await buildKits(stack)
  })

  afterAll(async () => {
    await stack?.close()
  })

  it.each(SERVICE_NAMES)(
    '%s: when it gets SIGTERM under keep-alive load, then /readyz answers 503, every answer carries Connection: close, in-flight requests finish, no connection is reset, and it exits within SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS',
    async (name) => {
      const kit = kits.find((k) => k.name === name)!
      const readiness = kit.probes.find((p) => p.envelope === 'readiness')!
      const probes = kit.probes.filter((p) => p !== readiness)
      const load = new KeepAliveLoad(name, kit.service.url, probes, readiness)
      load.start()
      await sleep(1500)
      const signalAt = performance.now()
      void kit.service.kill('SIGTERM')
      const exit = await exitWithin(kit.service, SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + 2000)
      // Go on a little after the exit: a client that still reuses a socket would hit a reset.
      await sleep(300)
      await load.stop()
      const findings = new Findings()
      checkShutdown(
        load.samples,
        readiness,
        probes,
        signalAt,
        exit,
        SHUTDOWN_TIMEOUT_MS,
        SHUTDOWN_DELAY_MS,
        findings,
      )
      findings.assertNone(`${name}, SIGTERM under keep-alive load`)
    },
  )
})
