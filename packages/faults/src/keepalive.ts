import { Client } from 'undici'
import { CLIENT_TIMEOUT_MS, type Probe, type Sample, send } from './load.ts'
import { sleep } from './sandbox.ts'
import type { ServiceName } from './service-process.ts'

/**
 * Keep-alive clients, each one connection (an undici Client) sending its next request as soon
 * as the last is answered, round-robin over the service's probes; plus one more polling
 * `/readyz` the same way. What a load balancer's pool does to a service being rolled: once
 * readiness answers anything but 200, the service is out of the pool and nothing new is sent
 * to it (requests under way finish). Without that, a client that keeps opening connections
 * while the port closes meets resets from the kernel's accept queue, which no server can avoid.
 */
export class KeepAliveLoad {
  readonly samples: Sample[] = []
  private running = false
  /** False once readiness said anything but 200: a balancer routes nothing new here. */
  private routable = true
  private loops: Promise<void>[] = []
  private readonly clients: Client[] = []

  constructor(
    private readonly service: ServiceName,
    private readonly url: string,
    private readonly probes: Probe[],
    private readonly readiness: Probe,
    private readonly connections = 4,
    private readonly pauseMs = 10,
  ) {}

  start(): void {
    this.running = true
    this.routable = true
    let turn = 0
    const loop = async (probeOf: () => Probe, isReadiness = false) => {
      const client = new Client(this.url, {
        headersTimeout: CLIENT_TIMEOUT_MS,
        bodyTimeout: CLIENT_TIMEOUT_MS,
        connectTimeout: CLIENT_TIMEOUT_MS,
      })
      this.clients.push(client)
      while (this.running && this.routable) {
        const probe = probeOf()
        const spec = probe.next()
        if (spec) {
          const sample = await send(client, this.service, probe.name, spec)
          this.samples.push(sample)
          probe.onSample?.(sample)
          if (isReadiness && (sample.errorCode || sample.status !== 200)) this.routable = false
          if (sample.errorCode) await sleep(50)
        }
        await sleep(this.pauseMs)
      }
    }
    for (let i = 0; i < this.connections; i++)
      this.loops.push(loop(() => this.probes[turn++ % this.probes.length]!))
    this.loops.push(loop(() => this.readiness, true))
  }

  async stop(): Promise<void> {
    this.running = false
    await Promise.all(this.loops)
    await Promise.all(this.clients.map((c) => c.destroy()))
  }
}
