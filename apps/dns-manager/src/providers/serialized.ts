import { type DnsProvider, ProviderError } from '../domain/provider.ts'

/**
 * One change call per zone at a time in this process. PowerDNS with its sqlite backend answers
 * 500 to a PATCH that meets another one on the same database, and concurrent RRset replacements
 * on Cloudflare interleave their calls; in a queue they cannot. A call that does not get its
 * turn within `waitMs` (the upstream is slow: the one ahead is still waiting for it) fails with a
 * ProviderError without sending anything, so no request waits in line longer than one upstream
 * timeout. Reads are not queued.
 */
export function serializePerZone(provider: DnsProvider, waitMs: number): DnsProvider {
  const tails = new Map<string, Promise<unknown>>()
  return {
    kind: provider.kind,
    listRRsets: (zone) => provider.listRRsets(zone),
    ...(provider.ensureZone ? { ensureZone: provider.ensureZone.bind(provider) } : {}),
    async applyRRsets(zone, rrsets) {
      const ahead = tails.get(zone) ?? Promise.resolve()
      let done!: () => void
      const mine = new Promise<void>((r) => (done = r))
      const tail = ahead.then(() => mine)
      tails.set(zone, tail)
      try {
        let timer: NodeJS.Timeout | undefined
        const turn = await Promise.race([
          ahead.then(() => true),
          new Promise<false>((r) => {
            timer = setTimeout(() => r(false), waitMs)
          }),
        ])
        clearTimeout(timer)
        if (!turn)
          throw new ProviderError(
            `the upstream is still busy with an earlier change of ${zone}; nothing was sent`,
          )
        // Known not sent: the caller may treat this failure as a refusal rather than an unknown outcome.
        return await provider.applyRRsets(zone, rrsets)
      } finally {
        done()
        if (tails.get(zone) === tail) tails.delete(zone)
      }
    },
  }
}
